"""A small canonical corpus for the contract suite: rows in the canonical store, mirrored into the
backend under test when it is an external index (the states pushed are built here, not by the
application's services, so a backend is tested alone)."""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field, replace

from django.utils import timezone

from knowledge.models import Chunk, ChunkEmbedding, Connector, Document, Environment, Principal, Tenant
from knowledge.store.chunks import index_embeddings, insert_chunks
from knowledge.store.filters import update_document_filters
from retrieval_backends.base import ExternalIndex, KnowledgeRetrievalBackend
from retrieval_backends.types import (
    ChunkInput,
    DocumentState,
    EmbeddingUpdate,
    MirroredChunk,
    SearchScope,
)

DIM = 384
MODEL = "contract-model"
_tenants = itertools.count()


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
    versions: dict[int, int] = field(default_factory=dict)

    @property
    def external(self) -> ExternalIndex | None:
        return self.backend if isinstance(self.backend, ExternalIndex) else None

    def scope(self, *tokens: str, **kwargs: object) -> SearchScope:
        return SearchScope(tenant_id=self.tenant.pk, principal_tokens=frozenset(tokens), **kwargs)  # type: ignore[arg-type]

    def alice_scope(self, **kwargs: object) -> SearchScope:
        return self.scope("public", self.alice.acl_token, self.eng.acl_token, **kwargs)

    def bob_scope(self, **kwargs: object) -> SearchScope:
        return self.scope("public", self.bob.acl_token, **kwargs)

    def key_of(self, document_id: int) -> str:
        return next((k for k, d in self.docs.items() if d.pk == document_id), f"?{document_id}")

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
        model: str = MODEL,
    ) -> Document:
        """A document with these chunks (and vectors), in the canonical store and the index."""
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
        stored = insert_chunks(
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
                    acl_tokens=tokens,
                )
                for index, text in enumerate(texts)
            ]
        )
        if vectors:
            pairs = zip(stored, vectors, strict=True)
            updates = [EmbeddingUpdate(chunk_id=s.id, vector=v, model=model) for s, v in pairs]
            index_embeddings(updates, len(vectors[0]))
        self.docs[key] = document
        self.push(self.state(key))
        return document

    def state(self, key: str) -> DocumentState:
        """The document's absolute state as the canonical store holds it, at a new version."""
        document = Document.objects.get(pk=self.docs[key].pk)
        chunks = list(Chunk.objects.filter(document=document).order_by("chunk_index"))
        vectors: dict[int, dict[str, tuple[float, ...]]] = {c.pk: {} for c in chunks}
        for embedding in ChunkEmbedding.objects.filter(chunk__document=document):
            vectors[embedding.chunk_id][embedding.model] = tuple(embedding.vector_values())
        self.versions[document.pk] = self.versions.get(document.pk, 0) + 1
        return DocumentState(
            document_id=document.pk,
            tenant_id=document.tenant_id,
            connector_id=document.connector_id,
            environment_id=document.environment_id,
            acl_tokens=tuple(chunks[0].acl_tokens) if chunks else (),
            is_deleted=document.deleted_at is not None,
            title=document.title,
            chunks=tuple(
                MirroredChunk(
                    chunk_id=c.pk,
                    chunk_index=c.chunk_index,
                    content=c.content,
                    language=c.language,
                    vectors=vectors[c.pk],
                )
                for c in chunks
            ),  # fmt: skip
            version=self.versions[document.pk],
        )

    def change(self, key: str, *, tokens: tuple[str, ...] | None = None, deleted: bool | None = None) -> None:
        """A new ACL or deletion state, written to the canonical rows and pushed to an index."""
        current = self.state(key)
        changed = replace(
            current,
            acl_tokens=tokens if tokens is not None else current.acl_tokens,
            is_deleted=deleted if deleted is not None else current.is_deleted,
        )
        update_document_filters([changed])
        self.push(changed)

    def push(self, state: DocumentState) -> None:
        if self.external is not None:
            assert self.external.sync_document_access([state]) == {}
            self.external.refresh()

    def delete(self, key: str) -> None:
        """The document gone from the canonical store and, at a version above any push, the index."""
        document = self.docs[key]
        version = self.versions.get(document.pk, 0) + 1
        Document.objects.filter(pk=document.pk).delete()
        if self.external is not None:
            assert self.external.sync_document_deletions({document.pk: version}) == {}
            self.external.refresh()


def build_corpus(backend: KnowledgeRetrievalBackend) -> Corpus:
    n = next(_tenants)
    tenant = Tenant.objects.create(slug=f"contract-a-{n}", name="A")
    other = Tenant.objects.create(slug=f"contract-b-{n}", name="B")
    eng = Principal.objects.create(tenant=tenant, kind="group", external_id="eng")
    alice = Principal.objects.create(tenant=tenant, kind="user", external_id="alice@example.com")
    alice.groups.add(eng)
    c = Corpus(
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
    c.add("public", ["the quick brown fox jumps over the lazy dog"], [basis(0)])
    c.add("alice", ["alice private salary review notes"], [basis(1)], tokens=(alice.acl_token,))
    c.add("eng", ["engineering oncall runbook for the pager rotation"], [basis(2)],
          tokens=(eng.acl_token,), environment=c.prod)  # fmt: skip
    c.add("staging", ["staging deploy checklist with a fox mascot"], [basis(3)], environment=c.staging)
    c.add("second", ["second connector notes about the fox"], [basis(4)], connector=c.connector2)
    c.add("deleted", ["deleted memo about the fox and salary"], [basis(5)], deleted=True)
    c.add("foreign", ["tenant b fox secret salary"], [basis(0)], connector=c.other_connector)
    return c
