"""A small canonical corpus written through a backend's own write methods, for the contract suite."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from django.utils import timezone

from knowledge.models import Connector, Document, Environment, Principal, Tenant
from retrieval_backends.base import KnowledgeRetrievalBackend
from retrieval_backends.types import ChunkInput, EmbeddingUpdate, SearchScope

DIM = 384
MODEL = "contract-model"


def basis(i: int, dim: int = DIM, noise: float = 0.0) -> tuple[float, ...]:
    """Unit vector along axis i, optionally tilted towards axis i+1."""
    vec = [0.0] * dim
    vec[i % dim] = 1.0
    vec[(i + 1) % dim] = noise
    norm = (1.0 + noise * noise) ** 0.5
    return tuple(v / norm for v in vec)


@dataclass
class Corpus:
    backend: KnowledgeRetrievalBackend
    tenant: Tenant
    other_tenant: Tenant
    connector: Connector
    connector2: Connector
    other_connector: Connector
    prod: Environment
    staging: Environment
    alice: Principal
    bob: Principal
    eng: Principal
    docs: dict[str, Document] = field(default_factory=dict)
    # Makes canonical writes searchable: nothing for PostgreSQL, a push and refresh for an index.
    settle: Callable[[], None] = field(default=lambda: None)

    def scope(self, *tokens: str, **kwargs: object) -> SearchScope:
        return SearchScope(tenant_id=self.tenant.pk, principal_tokens=frozenset(tokens), **kwargs)  # type: ignore[arg-type]

    def alice_scope(self, **kwargs: object) -> SearchScope:
        return self.scope("public", self.alice.acl_token, self.eng.acl_token, **kwargs)

    def bob_scope(self, **kwargs: object) -> SearchScope:
        return self.scope("public", self.bob.acl_token, **kwargs)

    def add(
        self,
        key: str,
        texts: list[str],
        vectors: list[tuple[float, ...]] | None,
        *,
        connector: Connector | None = None,
        tokens: tuple[str, ...] = ("public",),
        environment: Environment | None = None,
        deleted: bool = False,
        language: str = "english",
        indexes: list[int] | None = None,
        chunk_tokens: dict[int, tuple[str, ...]] | None = None,
        model: str = MODEL,
    ) -> Document:
        connector = connector or self.connector
        content = "\n\n".join(texts)
        document = Document.objects.create(
            tenant_id=connector.tenant_id,
            connector=connector,
            external_id=key,
            title=key.title(),
            content=content,
            content_hash=hashlib.sha256(content.encode()).hexdigest(),
            environment=environment,
            is_public="public" in tokens,
            language=language,
            deleted_at=timezone.now() if deleted else None,
        )
        principal_ids = [int(t[2:]) for t in tokens if t != "public"]
        document.allowed_principals.set(Principal.objects.filter(pk__in=principal_ids))
        indexes = indexes if indexes is not None else list(range(len(texts)))
        stored = self.backend.insert_chunks(
            [
                ChunkInput(
                    document_id=document.pk,
                    chunk_index=index,
                    content=text,
                    tenant_id=connector.tenant_id,
                    connector_id=connector.pk,
                    language=language,
                    environment_id=environment.pk if environment else None,
                    is_deleted=deleted,
                    acl_tokens=(chunk_tokens or {}).get(index, tokens),
                )
                for index, text in zip(indexes, texts, strict=True)
            ]
        )
        if vectors:
            self.backend.index_embeddings(
                [
                    EmbeddingUpdate(chunk_id=s.id, vector=v, model=model)
                    for s, v in zip(stored, vectors, strict=True)
                ],
                len(vectors[0]),
            )
        self.docs[key] = document
        self.settle()
        return document


def build_corpus(backend: KnowledgeRetrievalBackend, settle: Callable[[], None] | None = None) -> Corpus:
    tenant = Tenant.objects.create(slug="contract-a", name="A")
    other = Tenant.objects.create(slug="contract-b", name="B")
    eng = Principal.objects.create(tenant=tenant, kind="group", external_id="eng")
    alice = Principal.objects.create(tenant=tenant, kind="user", external_id="alice@example.com")
    alice.groups.add(eng)
    corpus = Corpus(
        backend=backend,
        tenant=tenant,
        other_tenant=other,
        connector=Connector.objects.create(tenant=tenant, name="one", kind="api"),
        connector2=Connector.objects.create(tenant=tenant, name="two", kind="api"),
        other_connector=Connector.objects.create(tenant=other, name="one", kind="api"),
        prod=Environment.objects.create(tenant=tenant, slug="prod", name="Prod"),
        staging=Environment.objects.create(tenant=tenant, slug="staging", name="Staging"),
        alice=alice,
        bob=Principal.objects.create(tenant=tenant, kind="user", external_id="bob@example.com"),
        eng=eng,
    )
    c = corpus
    if settle is not None:
        c.settle = settle
    c.add("public", ["the quick brown fox jumps over the lazy dog"], [basis(0)])
    c.add("alice", ["alice private salary review notes"], [basis(1)], tokens=(alice.acl_token,))
    c.add(
        "eng",
        ["engineering oncall runbook for the pager rotation"],
        [basis(2)],
        tokens=(eng.acl_token,),
        environment=c.prod,
    )
    c.add("staging", ["staging deploy checklist with a fox mascot"], [basis(3)], environment=c.staging)
    c.add("second", ["second connector notes about the fox"], [basis(4)], connector=c.connector2)
    c.add("deleted", ["deleted memo about the fox and salary"], [basis(5)], deleted=True)
    c.add("foreign", ["tenant b fox secret salary"], [basis(0)], connector=c.other_connector)
    return corpus
