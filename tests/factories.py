"""factory-boy factories for every model."""

from __future__ import annotations

import hashlib

import factory
from django.contrib.auth.models import User

from knowledge.models import Chunk, ChunkEmbedding, Connector, Document, Environment, Principal, Tenant


class TenantFactory(factory.django.DjangoModelFactory[Tenant]):
    class Meta:
        model = Tenant
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"tenant-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())


class EnvironmentFactory(factory.django.DjangoModelFactory[Environment]):
    class Meta:
        model = Environment

    tenant = factory.SubFactory(TenantFactory)
    slug = factory.Sequence(lambda n: f"env-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())


class ConnectorFactory(factory.django.DjangoModelFactory[Connector]):
    class Meta:
        model = Connector

    tenant = factory.SubFactory(TenantFactory)
    name = factory.Sequence(lambda n: f"connector-{n}")
    kind = Connector.Kind.API
    config: dict[str, object] = {}


class PrincipalFactory(factory.django.DjangoModelFactory[Principal]):
    class Meta:
        model = Principal

    tenant = factory.SubFactory(TenantFactory)
    kind = Principal.Kind.USER
    external_id = factory.Sequence(lambda n: f"user{n}@example.com")


class GroupFactory(PrincipalFactory):
    kind = Principal.Kind.GROUP
    external_id = factory.Sequence(lambda n: f"group-{n}")


class DocumentFactory(factory.django.DjangoModelFactory[Document]):
    class Meta:
        model = Document

    connector = factory.SubFactory(ConnectorFactory)
    tenant = factory.LazyAttribute(lambda o: o.connector.tenant)
    external_id = factory.Sequence(lambda n: f"doc-{n}")
    title = factory.Sequence(lambda n: f"Document {n}")
    content = factory.Faker("paragraph")
    content_hash = factory.LazyAttribute(lambda o: hashlib.sha256(o.content.encode()).hexdigest())


class ChunkFactory(factory.django.DjangoModelFactory[Chunk]):
    class Meta:
        model = Chunk

    document = factory.SubFactory(DocumentFactory)
    chunk_index = factory.Sequence(lambda n: n)
    content = factory.Faker("sentence")
    tenant = factory.LazyAttribute(lambda o: o.document.tenant)
    connector = factory.LazyAttribute(lambda o: o.document.connector)
    environment = factory.LazyAttribute(lambda o: o.document.environment)
    acl_tokens = factory.LazyFunction(lambda: ["public"])


class ChunkEmbeddingFactory(factory.django.DjangoModelFactory[ChunkEmbedding]):
    class Meta:
        model = ChunkEmbedding

    chunk = factory.SubFactory(ChunkFactory)
    model = "test-model"
    dimensions = 3
    embedding = factory.LazyFunction(lambda: [1.0, 0.0, 0.0])
    tenant = factory.LazyAttribute(lambda o: o.chunk.tenant)
    connector = factory.LazyAttribute(lambda o: o.chunk.connector)
    acl_tokens = factory.LazyAttribute(lambda o: o.chunk.acl_tokens)


class UserFactory(factory.django.DjangoModelFactory[User]):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"staff{n}")
    password = factory.django.Password("pw-123456")
    is_staff = True
    is_superuser = True
