"""Vector lane: filtered pgvector search, exact over small visible sets, else on the tenant's own graph.

Filtered HNSW loses results when few rows are visible: the graph walk meets too few rows that pass
the filter. Per scope we estimate how many vectors it makes visible (`visibility`: the planner with
extended statistics, and each tenant's sampled ACLs):

* at most `exact_scan_max_rows`, or the tenant has no index of its own: rank every visible row
  (recall 1.0; ~2.5 us a row, so 1k rows take ~1 ms but 10k rows ~25 ms at p95 -- keep the threshold
  near 5k).
* more: HNSW iterative scan of the tenant's own index (`knowledge.store.vector_indexes`, kept by the
  maintenance service for every tenant past the threshold) in strict order with `ef_search = 2 *
  limit / visible fraction` (at most max(200, 4 * limit)), the fraction of the tenant's own vectors,
  which are the whole graph: so about 2 * limit visible rows are among the first candidates of the
  walk (100k vectors, 10% visible, ef_search 200: recall@10 0.999 at p95 12 ms, vs 25 ms for the
  exact scan), and the iterative scan finds the rest.

Vectors stored as `halfvec` (a model key ending in `@halfvec`) are read from their own column with
halfvec arithmetic; the query vector is cast to the same type.

Every query runs with JIT off: it only adds compile time (1% visible, exact: p95 4.8 ms -> 1.5 ms). A
planner estimate can be wrong (ACL-token statistics are coarse): when the graph walk returns fewer
than `limit` rows the visible set is evidently small, so the query is repeated exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from knowledge.store import vector_indexes
from knowledge.store.lookup_cache import LookupCache
from knowledge.store.search.visibility import Visibility, candidate_where, estimate_visibility
from knowledge.store.sql import (
    CHUNK,
    EMBEDDING,
    lane_fetch,
    rows_to_hits,
    text_join,
    vector_literal,
)
from retrieval_backends.types import LaneHit, SearchScope, vector_lane_can_match, vector_storage

MIN_EF_SEARCH = 40
MAX_EF_SEARCH = 1000
EF_CEILING, EF_CEILING_PER_HIT = 200, 4
EF_PER_VISIBLE_HIT = 2
COMMON_GUCS: dict[str, str | int] = {"jit": "off"}


def _hydrate_sql(inner: str) -> str:
    # Text only for the first hits the caller asks for (the search reads the others it keeps).
    return (
        f"SELECT e.chunk_id, c.document_id, c.chunk_index, 1 - e.dist, t.content, t.title, t.source_url, "
        f"c.tenant_id, c.parent_index, t.page, t.external_id "
        f"FROM (SELECT i.*, row_number() OVER (ORDER BY i.dist, i.chunk_id) AS rank FROM ({inner}) i) e "
        f"JOIN {CHUNK} c ON c.id = e.chunk_id {text_join('e.chunk_id', 'e.rank', '%s')} "
        f"ORDER BY e.dist, e.chunk_id"
    )


def _exact_sql(where: str, storage: str) -> str:
    # The un-cast expression cannot use an HNSW index, so every visible row is ranked.
    column, _, _ = vector_indexes.column_and_cast(storage, 0)
    base = "halfvec" if storage == "halfvec" else "vector"
    return _hydrate_sql(
        f"SELECT e.chunk_id, e.{column} <=> %s::{base} AS dist FROM {EMBEDDING} e "
        f"WHERE {where} AND e.{column} IS NOT NULL ORDER BY dist, e.chunk_id LIMIT %s"
    )


def _hnsw_sql(where: str, dimensions: int, storage: str) -> str:
    column, cast, _ = vector_indexes.column_and_cast(storage, dimensions)
    return _hydrate_sql(
        f"SELECT e.chunk_id, e.{column}::{cast} <=> %s::{cast} AS dist FROM {EMBEDDING} e "
        f"WHERE {where} ORDER BY dist LIMIT %s"
    )


def choose_ef_search(limit: int, visible_fraction: float) -> int:
    """Candidate-list size for iterative HNSW: enough that ~limit visible rows survive the filter,
    up to a few per row asked for; past that the iterative scan goes on more cheaply than a wider
    first list (a 300k-vector tenant at 10 % visible, 50 rows: ef 1,000 p95 45 ms, ef 200 34 ms with
    the same recall; 10 rows: ef 200 11 ms, ef 400 21 ms)."""
    wanted = limit * EF_PER_VISIBLE_HIT / max(visible_fraction, 1e-3)
    ceiling = max(EF_CEILING, EF_CEILING_PER_HIT * limit)
    return int(min(ceiling, MAX_EF_SEARCH, max(MIN_EF_SEARCH, math.ceil(wanted))))


def hnsw_settings(limit: int, visible_fraction: float) -> dict[str, str | int]:
    return {
        **COMMON_GUCS,
        "hnsw.ef_search": choose_ef_search(limit, visible_fraction),
        "hnsw.iterative_scan": "strict_order",
        "hnsw.max_scan_tuples": 50000,
        # The walk must use the index; a scan plus sort is the exact path, chosen above. Sorting is
        # off too: for 50 rows the planner preferred a tenant's b-tree and a sort of its 9,251
        # distances (10 ms) to the graph (3 ms).
        "enable_seqscan": "off",
        "enable_bitmapscan": "off",
        "enable_sort": "off",
    }


def vector_search(
    scope: SearchScope,
    query: Sequence[float],
    dimensions: int,
    limit: int,
    *,
    model: str | None,
    timeout_ms: int,
    exact_scan_max_rows: int,
    estimates: LookupCache | None = None,
    text_hits: int = 0,
) -> list[LaneHit]:
    if not vector_lane_can_match(scope, query, dimensions, limit):
        return []
    where, params = candidate_where(scope, dimensions, model)
    args = [vector_literal(query), *params, limit, text_hits]
    exact_where, exact_params = candidate_where(scope, dimensions, model, tenant_tokens=True)
    exact_args = [vector_literal(query), *exact_params, limit, text_hits]
    storage = vector_storage(model)
    if _has_own_index(vector_indexes.VectorSpace(scope.tenant_id, dimensions, storage), estimates):
        # Statistics change only with ANALYZE; a stale estimate just picks the other (correct) path.
        def estimate() -> Visibility:
            return estimate_visibility(scope, dimensions, model, timeout_ms)

        key = ("visible", where, *(tuple(p) if isinstance(p, list) else p for p in params))
        seen = estimates.get(key, estimate, keep=lambda _: True) if estimates else estimate()
        if seen.rows > exact_scan_max_rows:
            [rows] = lane_fetch(
                timeout_ms,
                [(_hnsw_sql(where, dimensions, storage), args)],
                **hnsw_settings(limit, seen.fraction),
            )
            if len(rows) >= limit:
                return rows_to_hits(rows)
    [rows] = lane_fetch(timeout_ms, [(_exact_sql(exact_where, storage), exact_args)], **COMMON_GUCS)
    return rows_to_hits(rows)


def _has_own_index(space: vector_indexes.VectorSpace, estimates: LookupCache | None) -> bool:
    """Whether the tenant's graph exists and is valid (a stale answer only picks the slower path)."""
    if not space.indexable:
        return False
    if estimates is None:
        return space in vector_indexes.valid_spaces()
    return space in estimates.get(("tenant-indexes",), vector_indexes.valid_spaces, keep=lambda _: True)
