"""The PostgreSQL retrieval backend: the canonical tables are the index, so hits need no verification."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import DatabaseError, connection
from django.db.models.signals import post_delete, post_save
from django.db.utils import OperationalError
from psycopg import errors as pg_errors

from knowledge.models import Chunk, ChunkEmbedding, KeywordStatistics
from retrieval_backends.base import BackendUnavailable, KnowledgeRetrievalBackend
from retrieval_backends.lookup_cache import LookupCache
from retrieval_backends.postgres import bm25, keyword, neighbors, vector, writes
from retrieval_backends.postgres.bm25 import BM25Params
from retrieval_backends.postgres.sql import CHUNK, EMBEDDING, connector_filter, distinct_values
from retrieval_backends.types import (
    AccessScope,
    ChunkInput,
    EmbeddingUpdate,
    LaneHit,
    NeighborAnchor,
    SearchScope,
    StoredChunk,
)


class PostgresRetrievalBackend(KnowledgeRetrievalBackend):
    """pgvector + full-text search on the canonical chunk tables."""

    requires_result_verification = False
    name = "postgres"

    def __init__(
        self,
        *,
        lane_timeout_ms: int = 2000,
        exact_scan_max_rows: int = 5000,
        bm25_k1: float = 1.2,
        bm25_b: float = 0.75,
        keyword_candidate_budget: int = 500,
        **options: Any,
    ):
        super().__init__(**options)
        self.lane_timeout_ms = lane_timeout_ms
        self.exact_scan_max_rows = exact_scan_max_rows
        self.bm25 = BM25Params(k1=bm25_k1, b=bm25_b, candidate_budget=keyword_candidate_budget)
        # Languages, statistics presence and vector models, asked by every search (see LookupCache).
        self.lookups = LookupCache()

    # --- writes -------------------------------------------------------------------------------------
    def insert_chunks(self, chunks: Sequence[ChunkInput]) -> list[StoredChunk]:
        self.lookups.written()
        return writes.insert_chunks(chunks)

    def index_embeddings(self, updates: Sequence[EmbeddingUpdate], dimensions: int) -> int:
        self.lookups.written()
        return writes.index_embeddings(updates, dimensions)

    def delete_document_chunks(self, document_id: int) -> int:
        self.lookups.written()
        return writes.delete_document_chunks(document_id)

    def get_document_chunks(self, document_id: int) -> list[StoredChunk]:
        return [writes.to_stored(c) for c in Chunk.objects.filter(document_id=document_id)]

    def count_document_chunks(self, document_id: int) -> int:
        return Chunk.objects.filter(document_id=document_id).count()

    # --- lanes --------------------------------------------------------------------------------------
    def vector_search(
        self,
        scope: SearchScope,
        query_embedding: Sequence[float],
        dimensions: int,
        limit: int,
        *,
        model: str | None = None,
    ) -> list[LaneHit]:
        return vector.vector_search(
            scope,
            query_embedding,
            dimensions,
            limit,
            model=model,
            timeout_ms=self.lane_timeout_ms,
            exact_scan_max_rows=self.exact_scan_max_rows,
            estimates=self.lookups,
        )

    def keyword_search(
        self, scope: SearchScope, query_text: str, languages: Sequence[str], limit: int
    ) -> list[LaneHit]:
        hits = bm25.bm25_search(
            scope, query_text, languages, limit, params=self.bm25, timeout_ms=self.lane_timeout_ms
        )
        # BM25 finds nothing without statistics; only then is it worth asking whether they exist.
        if hits or self.has_keyword_statistics(scope.tenant_id, languages, scope.connector_ids):
            return hits
        return keyword.keyword_search(scope, query_text, languages, limit, timeout_ms=self.lane_timeout_ms)

    def find_neighbors(
        self, access_scope: AccessScope, anchors: Iterable[NeighborAnchor], radius: int
    ) -> list[LaneHit]:
        return neighbors.find_neighbors(access_scope, anchors, radius)

    # --- diagnostics --------------------------------------------------------------------------------
    # Only answers that do no harm when stale are cached: a language, dimension, model or statistics
    # that exists. "None" is asked again, so it never hides what another process has just written.
    def get_text_search_languages(self, tenant_id: int, connector_ids: Sequence[int] | None) -> list[str]:
        where, params = connector_filter("t", connector_ids)
        return list(  # a copy: the cached list is shared by every search
            self.lookups.get(
                ("languages", tenant_id, _key(connector_ids)),
                lambda: distinct_values(
                    CHUNK, "language", f"NOT t.is_deleted AND {where}", tenant_id, params
                ),
            )
        )

    def get_populated_embedding_dimensions(
        self, tenant_id: int, connector_ids: Sequence[int] | None
    ) -> list[int]:
        where, params = connector_filter("t", connector_ids)
        return list(
            self.lookups.get(
                ("dimensions", tenant_id, _key(connector_ids)),
                lambda: distinct_values(EMBEDDING, "dimensions", where, tenant_id, params),
            )
        )

    def has_embedding_model(self, tenant_id: int, model: str) -> bool:
        return self.lookups.get(
            ("model", tenant_id, model),
            lambda: ChunkEmbedding.objects.filter(tenant_id=tenant_id, model=model).exists(),
        )

    def has_keyword_statistics(
        self, tenant_id: int, languages: Sequence[str], connector_ids: Sequence[int] | None
    ) -> bool:
        def ask() -> bool:
            with connection.cursor() as cursor:
                return bm25.has_statistics(cursor, tenant_id, languages)

        return self.lookups.get(("statistics", tenant_id, tuple(sorted(languages))), ask)

    def is_search_timeout(self, error: BaseException) -> bool:
        cause: BaseException | None = error
        while cause is not None:
            if isinstance(cause, pg_errors.QueryCanceled):
                return True
            cause = cause.__cause__
        return False

    def health(self) -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
                if cursor.fetchone() is None:
                    raise BackendUnavailable("the pgvector extension is not installed")
        except (OperationalError, DatabaseError) as exc:
            raise BackendUnavailable(f"PostgreSQL is unreachable: {exc}") from exc


def _key(connector_ids: Sequence[int] | None) -> tuple[int, ...] | None:
    return None if connector_ids is None else tuple(sorted(connector_ids))


def _model_written(**kwargs: Any) -> None:
    """ORM writes (admin, factories, a deleted statistics row) clear the look-ups like backend writes."""
    LookupCache.written_everywhere()


# Not post_delete on chunks and vectors: a receiver would stop Django's fast cascade deletes, and a
# stale "it exists" after a delete does no harm.
for _model in (Chunk, ChunkEmbedding, KeywordStatistics):
    post_save.connect(_model_written, sender=_model, dispatch_uid=f"lookups-{_model.__name__}-save")
post_delete.connect(_model_written, sender=KeywordStatistics, dispatch_uid="lookups-statistics-delete")
