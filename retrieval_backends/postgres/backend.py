"""The PostgreSQL retrieval backend: the canonical tables are the index, so hits need no verification."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import DatabaseError, connection
from django.db.utils import OperationalError
from psycopg import errors as pg_errors

from retrieval_backends.base import BackendUnavailable, KnowledgeRetrievalBackend, keyword_lane_can_match
from retrieval_backends.postgres import bm25, keyword, vector
from retrieval_backends.postgres.bm25 import BM25Params
from retrieval_backends.postgres.store import CanonicalStore, CanonicalStoreMixin
from retrieval_backends.types import LaneHit, SearchScope


class PostgresRetrievalBackend(CanonicalStoreMixin, KnowledgeRetrievalBackend):
    """pgvector + full-text search on the canonical chunk tables."""

    requires_result_verification = False
    name = "postgres"
    reads_lane_text = True

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
        self.store = CanonicalStore()
        self.lane_timeout_ms = lane_timeout_ms
        self.exact_scan_max_rows = exact_scan_max_rows
        self.bm25 = BM25Params(k1=bm25_k1, b=bm25_b, candidate_budget=keyword_candidate_budget)

    # --- lanes --------------------------------------------------------------------------------------
    def vector_search(
        self,
        scope: SearchScope,
        query_embedding: Sequence[float],
        dimensions: int,
        limit: int,
        *,
        model: str | None = None,
        text_hits: int = 0,
    ) -> list[LaneHit]:
        return vector.vector_search(
            scope,
            query_embedding,
            dimensions,
            limit,
            model=model,
            timeout_ms=self.lane_timeout_ms,
            exact_scan_max_rows=self.exact_scan_max_rows,
            estimates=self.store.lookups,
            text_hits=text_hits,
        )

    def keyword_search(
        self, scope: SearchScope, query_text: str, languages: Sequence[str], limit: int, *, text_hits: int = 0
    ) -> list[LaneHit]:
        if not keyword_lane_can_match(scope, query_text, languages, limit):
            return []
        hits = bm25.bm25_search(
            scope,
            query_text,
            languages,
            limit,
            params=self.bm25,
            timeout_ms=self.lane_timeout_ms,
            text_hits=text_hits,
        )
        # BM25 finds nothing without statistics; only then is it worth asking whether they exist.
        if hits or self.has_keyword_statistics(scope.tenant_id, languages, scope.connector_ids):
            return hits
        return keyword.keyword_search(scope, query_text, languages, limit, timeout_ms=self.lane_timeout_ms)

    # --- diagnostics --------------------------------------------------------------------------------
    def has_keyword_statistics(
        self, tenant_id: int, languages: Sequence[str], connector_ids: Sequence[int] | None
    ) -> bool:
        def ask() -> bool:
            with connection.cursor() as cursor:
                return bm25.has_statistics(cursor, tenant_id, languages)

        return self.store.lookups.get(("statistics", tenant_id, tuple(sorted(languages))), ask)

    def keyword_warnings(
        self, tenant_id: int, languages: Sequence[str], connector_ids: Sequence[int] | None
    ) -> list[str]:
        if languages and not self.has_keyword_statistics(tenant_id, languages, connector_ids):
            return [
                "keyword statistics are missing, so the keyword lane ranks with ts_rank instead of BM25; "
                "run `manage.py rebuild_keyword_statistics`"
            ]
        return []

    def rebuild_keyword_statistics(self, tenant_id: int | None) -> str:
        with connection.cursor() as cursor:
            bm25.rebuild_statistics(cursor, tenant_id)
        return "BM25 statistics rebuilt"

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
