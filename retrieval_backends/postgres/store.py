"""The canonical chunk store: chunks, vectors and their filter columns in PostgreSQL.

Every backend keeps its canonical copy here (PostgreSQL is the source of truth); the PostgreSQL
backend also searches it, an external backend composes it and mirrors it into its own index.
`CanonicalStoreMixin` gives a backend the contract's store methods by delegation.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection
from django.db.models.signals import post_delete, post_save

from knowledge.models import Chunk, ChunkEmbedding, KeywordStatistics
from retrieval_backends.lookup_cache import LookupCache
from retrieval_backends.postgres import filters, neighbors, writes
from retrieval_backends.postgres.sql import (
    CHUNK,
    EMBEDDING,
    connector_filter,
    distinct_values,
    embedding_models,
)
from retrieval_backends.types import (
    AccessScope,
    ChunkInput,
    DocumentState,
    EmbeddingUpdate,
    LaneHit,
    NeighborAnchor,
    StoredChunk,
)

MISSING = f"""
SELECT c.id, c.content FROM {CHUNK} c
WHERE c.id > %s AND NOT EXISTS (SELECT 1 FROM {EMBEDDING} e WHERE e.chunk_id = c.id AND e.model = %s)
ORDER BY c.id LIMIT %s
"""
INVENTORY = f"""
SELECT t.slug,
       count(DISTINCT e.chunk_id),
       count(DISTINCT e.chunk_id) FILTER (WHERE e.model = %(model)s AND e.dimensions = %(dimensions)s),
       array_agg(DISTINCT e.model || ' (' || e.dimensions || ' dimensions)')
           FILTER (WHERE e.model <> %(model)s OR e.dimensions <> %(dimensions)s)
FROM {EMBEDDING} e JOIN knowledge_tenant t ON t.id = e.tenant_id
WHERE e.model <> ALL(%(ignored)s) AND NOT e.is_deleted
GROUP BY t.slug ORDER BY t.slug
"""


PGVECTOR_MINIMUM = (0, 7)
PGVECTOR_ITERATIVE_SCANS = (0, 8)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isascii() and part.isdigit())


class CanonicalStore:
    """Reads and writes of the canonical chunk and vector tables.

    The small look-ups every search makes (languages, vector models and dimensions) are cached per
    process (`LookupCache`): writes through the store clear them; only answers whose staleness is
    harmless ("it exists") are kept, so a "nothing there" never hides what was just written.
    """

    def __init__(self) -> None:
        self.lookups = LookupCache()

    def doctor_checks(self) -> list[tuple[str, str, str, str]]:
        """pgvector's presence and version."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        if row is None:
            return [("FAIL", "pgvector", "the vector extension is not installed", "run `manage.py migrate`")]
        if _version(row[0]) < PGVECTOR_MINIMUM:
            fix = "install pgvector 0.8+ and run `ALTER EXTENSION vector UPDATE`"
            return [("FAIL", "pgvector", f"version {row[0]} is too old (0.7 or newer needed)", fix)]
        note = "" if _version(row[0]) >= PGVECTOR_ITERATIVE_SCANS else "; 0.8+ adds iterative scans"
        return [("OK", "pgvector", f"version {row[0]}{note}", "")]

    def insert_chunks(self, chunks: Sequence[ChunkInput]) -> list[StoredChunk]:
        self.lookups.written()
        return writes.insert_chunks(chunks)

    def index_embeddings(self, updates: Sequence[EmbeddingUpdate], dimensions: int) -> int:
        self.lookups.written()
        return writes.index_embeddings(updates, dimensions)

    def delete_document_chunks(self, document_id: int) -> int:
        self.lookups.written()
        return writes.delete_document_chunks(document_id)

    def delete_documents_chunks(self, document_ids: Sequence[int]) -> int:
        self.lookups.written()
        return writes.delete_documents_chunks(document_ids)

    def get_document_chunks(self, document_id: int) -> list[StoredChunk]:
        return [writes.to_stored(c) for c in Chunk.objects.filter(document_id=document_id)]

    def count_document_chunks(self, document_id: int) -> int:
        return Chunk.objects.filter(document_id=document_id).count()

    def update_document_filters(self, states: Sequence[DocumentState]) -> int:
        return filters.update_document_filters(states)

    def lock_chunk_writes(self) -> None:
        """Block chunk inserts, updates and deletes until the caller's transaction ends."""
        with connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {CHUNK} IN SHARE MODE")

    def find_neighbors(
        self, scope: AccessScope, anchors: Iterable[NeighborAnchor], radius: int
    ) -> list[LaneHit]:
        return neighbors.find_neighbors(scope, anchors, radius)

    # --- vectors ------------------------------------------------------------------------------------
    def chunks_missing_embedding(self, model: str, after_id: int, limit: int) -> list[tuple[int, str]]:
        with connection.cursor() as cursor:
            cursor.execute(MISSING, [after_id, model, limit])
            return [(int(pk), str(content)) for pk, content in cursor.fetchall()]

    def count_chunks_missing_embedding(self, model: str) -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT count(*) FROM {CHUNK} c WHERE NOT EXISTS "
                f"(SELECT 1 FROM {EMBEDDING} e WHERE e.chunk_id = c.id AND e.model = %s)",
                [model],
            )
            return int(cursor.fetchone()[0])

    def prune_embeddings(self, keep_models: Sequence[str]) -> int:
        self.lookups.written()
        deleted, _ = ChunkEmbedding.objects.exclude(model__in=list(keep_models)).delete()
        return deleted

    def get_chunk_vectors(
        self, chunk_ids: Sequence[int], dimensions: int, model: str | None
    ) -> dict[int, tuple[float, ...]]:
        if not chunk_ids:
            return {}
        sql = (
            f"SELECT chunk_id, embedding::text FROM {EMBEDDING} WHERE chunk_id = ANY(%s) AND dimensions = %s"
        )
        params: list[Any] = [list(chunk_ids), dimensions]
        if model is not None:
            sql += " AND model = %s"
            params.append(model)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return {chunk_id: tuple(json.loads(text)) for chunk_id, text in cursor.fetchall()}

    def embedding_inventory(
        self, model: str, dimensions: int, ignored: Sequence[str]
    ) -> list[tuple[Any, ...]]:
        """Per tenant: (slug, chunks with a vector, with the given model's, the other models)."""
        with connection.cursor() as cursor:
            cursor.execute(INVENTORY, {"model": model, "dimensions": dimensions, "ignored": list(ignored)})
            return list(cursor.fetchall())

    def get_embedding_models(self, tenant_id: int) -> list[tuple[int, str]]:
        return list(self.lookups.get(("models", tenant_id), lambda: embedding_models(tenant_id)))

    def get_populated_embedding_dimensions(
        self, tenant_id: int, connector_ids: Sequence[int] | None
    ) -> list[int]:
        where, params = connector_filter("t", connector_ids)
        return distinct_values(EMBEDDING, "dimensions", where, tenant_id, params)

    def has_embedding_model(self, tenant_id: int, model: str) -> bool:
        return self.lookups.get(
            ("has-model", tenant_id, model),
            ChunkEmbedding.objects.filter(tenant_id=tenant_id, model=model).exists,
        )

    # --- languages ----------------------------------------------------------------------------------
    def supported_languages(self) -> set[str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT cfgname::text FROM pg_ts_config")
            return {row[0] for row in cursor.fetchall()}

    def get_text_search_languages(self, tenant_id: int, connector_ids: Sequence[int] | None) -> list[str]:
        where, params = connector_filter("t", connector_ids)
        return list(
            self.lookups.get(
                ("languages", tenant_id, _key(connector_ids)),
                lambda: distinct_values(
                    CHUNK, "language", f"NOT t.is_deleted AND {where}", tenant_id, params
                ),
            )
        )


def _key(connector_ids: Sequence[int] | None) -> tuple[int, ...] | None:
    return None if connector_ids is None else tuple(sorted(connector_ids))


def _model_written(**kwargs: Any) -> None:
    """ORM writes (admin, factories, a deleted statistics row) clear the look-ups like store writes."""
    LookupCache.written_everywhere()


# Not post_delete on chunks and vectors: a receiver would stop Django's fast cascade deletes, and a
# stale "it exists" after a delete does no harm.
for _model in (Chunk, ChunkEmbedding, KeywordStatistics):
    post_save.connect(_model_written, sender=_model, dispatch_uid=f"lookups-{_model.__name__}-save")
post_delete.connect(_model_written, sender=KeywordStatistics, dispatch_uid="lookups-statistics-delete")


class CanonicalStoreMixin:
    """The contract's store methods, delegated to `self.store` (a `CanonicalStore`)."""

    store: CanonicalStore

    def doctor_checks(self) -> list[tuple[str, str, str, str]]:
        return self.store.doctor_checks()

    def insert_chunks(self, chunks: Sequence[ChunkInput]) -> list[StoredChunk]:
        return self.store.insert_chunks(chunks)

    def index_embeddings(self, updates: Sequence[EmbeddingUpdate], dimensions: int) -> int:
        return self.store.index_embeddings(updates, dimensions)

    def delete_document_chunks(self, document_id: int) -> int:
        return self.store.delete_document_chunks(document_id)

    def delete_documents_chunks(self, document_ids: Sequence[int]) -> int:
        return self.store.delete_documents_chunks(document_ids)

    def get_document_chunks(self, document_id: int) -> list[StoredChunk]:
        return self.store.get_document_chunks(document_id)

    def count_document_chunks(self, document_id: int) -> int:
        return self.store.count_document_chunks(document_id)

    def update_document_filters(self, states: Sequence[DocumentState]) -> int:
        return self.store.update_document_filters(states)

    def lock_chunk_writes(self) -> None:
        self.store.lock_chunk_writes()

    def find_neighbors(
        self, access_scope: AccessScope, anchors: Iterable[NeighborAnchor], radius: int
    ) -> list[LaneHit]:
        return self.store.find_neighbors(access_scope, anchors, radius)

    def chunks_missing_embedding(self, model: str, after_id: int, limit: int) -> list[tuple[int, str]]:
        return self.store.chunks_missing_embedding(model, after_id, limit)

    def count_chunks_missing_embedding(self, model: str) -> int:
        return self.store.count_chunks_missing_embedding(model)

    def prune_embeddings(self, keep_models: Sequence[str]) -> int:
        return self.store.prune_embeddings(keep_models)

    def get_chunk_vectors(
        self, chunk_ids: Sequence[int], dimensions: int, model: str | None
    ) -> dict[int, tuple[float, ...]]:
        return self.store.get_chunk_vectors(chunk_ids, dimensions, model)

    def embedding_inventory(
        self, model: str, dimensions: int, ignored: Sequence[str]
    ) -> list[tuple[Any, ...]]:
        return self.store.embedding_inventory(model, dimensions, ignored)

    def get_embedding_models(self, tenant_id: int) -> list[tuple[int, str]]:
        return self.store.get_embedding_models(tenant_id)

    def get_populated_embedding_dimensions(
        self, tenant_id: int, connector_ids: Sequence[int] | None
    ) -> list[int]:
        return self.store.get_populated_embedding_dimensions(tenant_id, connector_ids)

    def has_embedding_model(self, tenant_id: int, model: str) -> bool:
        return self.store.has_embedding_model(tenant_id, model)

    def supported_languages(self) -> set[str]:
        return self.store.supported_languages()

    def get_text_search_languages(self, tenant_id: int, connector_ids: Sequence[int] | None) -> list[str]:
        return self.store.get_text_search_languages(tenant_id, connector_ids)
