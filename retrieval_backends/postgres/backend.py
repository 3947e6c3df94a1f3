"""The PostgreSQL retrieval backend: the canonical tables are the index, so hits need no verification.

Its lanes are the store's search statements (`knowledge.store.search`); it adds their timeouts,
settings and the BM25 fallback, and turns PostgreSQL's statement timeout into `LaneTimedOut`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.db import DatabaseError, InterfaceError, OperationalError
from psycopg import errors as pg_errors

from knowledge.store import diagnostics, replica
from knowledge.store.lookups import LOOKUPS, has_keyword_statistics
from knowledge.store.search import bm25, keyword, vector
from knowledge.store.search.bm25 import BM25Params
from retrieval_backends.base import BackendUnavailable, KnowledgeRetrievalBackend, LaneTimedOut
from retrieval_backends.types import LaneHit, SearchScope, keyword_lane_can_match

T = TypeVar("T")
MISSING_STATISTICS = (
    "keyword statistics are missing, so the keyword lane ranks with ts_rank instead of BM25; "
    "run `manage.py rebuild_keyword_statistics`"
)


class PostgresRetrievalBackend(KnowledgeRetrievalBackend):
    """pgvector + full-text search on the canonical chunk tables."""

    name = "postgres"

    def __init__(
        self,
        *,
        lane_timeout_ms: int = 2000,
        exact_scan_max_rows: int = 5000,
        tenant_index_min_vectors: int = 5000,
        bm25_k1: float = 1.2,
        bm25_b: float = 0.75,
        keyword_candidate_budget: int = 500,
        read_replica: str | None = None,
        **options: Any,
    ):
        super().__init__(**options)
        self.lane_timeout_ms = lane_timeout_ms
        self.exact_scan_max_rows = exact_scan_max_rows
        # A tenant's vectors of one dimension get an HNSW graph of their own past this many
        # (knowledge.services.vector_indexes); below it every search of them is an exact scan.
        self.tenant_index_min_vectors = tenant_index_min_vectors
        # A DATABASES alias of a streaming replica that serves a tenant's lanes once it has replayed
        # the tenant's last access change (knowledge.store.replica); None: the primary serves all.
        self.read_replica = read_replica
        self.bm25 = BM25Params(k1=bm25_k1, b=bm25_b, candidate_budget=keyword_candidate_budget)

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
        return self._routed(
            scope,
            lambda: vector.vector_search(
                scope,
                query_embedding,
                dimensions,
                limit,
                model=model,
                timeout_ms=self.lane_timeout_ms,
                exact_scan_max_rows=self.exact_scan_max_rows,
                estimates=LOOKUPS,
                text_hits=text_hits,
            ),
        )

    def keyword_search(
        self, scope: SearchScope, query_text: str, languages: Sequence[str], limit: int, *, text_hits: int = 0
    ) -> list[LaneHit]:
        if not keyword_lane_can_match(scope, query_text, languages, limit):
            return []
        timeout = self.lane_timeout_ms
        hits = self._routed(
            scope,
            lambda: bm25.bm25_search(
                scope, query_text, languages, limit, params=self.bm25, timeout_ms=timeout, text_hits=text_hits
            ),
        )
        # BM25 finds nothing without statistics; only then is it worth asking whether they exist.
        if hits or has_keyword_statistics(scope.tenant_id, languages):
            return hits
        return _timed(lambda: keyword.keyword_search(scope, query_text, languages, limit, timeout_ms=timeout))

    def _routed(self, scope: SearchScope, lane: Callable[[], T]) -> T:
        """The lane on the read replica when it is current for the scope's tenant, else (or when it
        fails to answer) on the primary."""
        with replica.reads_on_replica(self.read_replica, scope.tenant_id) as on_replica:
            if on_replica:
                try:
                    return _timed(lane)  # a statement timeout is the lane's, on either server
                except (OperationalError, InterfaceError) as exc:  # lost, or a recovery conflict
                    replica.replica_failed(self.read_replica, exc)
        return _timed(lane)

    def keyword_warnings(self, tenant_id: int, languages: Sequence[str]) -> list[str]:
        if languages and not has_keyword_statistics(tenant_id, languages):
            return [MISSING_STATISTICS]
        return []

    def health(self) -> None:
        try:
            if diagnostics.pgvector_version() is None:
                raise BackendUnavailable("the pgvector extension is not installed")
        except DatabaseError as exc:
            raise BackendUnavailable(f"PostgreSQL is unreachable: {exc}") from exc


def _timed(lane: Callable[[], T]) -> T:
    """Run a lane statement; PostgreSQL's statement timeout becomes LaneTimedOut."""
    try:
        return lane()
    except DatabaseError as exc:
        if _canceled(exc):
            raise LaneTimedOut(f"a PostgreSQL lane timed out: {exc}") from exc
        raise


def _canceled(error: BaseException) -> bool:
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, pg_errors.QueryCanceled):
            return True
        cause = cause.__cause__
    return False
