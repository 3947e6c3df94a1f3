"""Vector lane: filtered pgvector search that picks exact or HNSW iterative scan per query.

Filtered HNSW loses results when few rows are visible (the graph walk finds too few that pass the
filter). We estimate the visible row count with the planner; small visible sets are scanned exactly
(recall 1.0, cheap because they are small), larger ones use HNSW iterative scan with `ef_search`
scaled by the inverse of the visible fraction.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from knowledge.models.documents import INDEXED_DIMENSIONS
from retrieval_backends.postgres.sql import (
    CHUNK,
    DOCUMENT,
    EMBEDDING,
    lane_settings,
    rows_to_hits,
    scope_filter,
    vector_literal,
)
from retrieval_backends.types import LaneHit, SearchScope

MIN_EF_SEARCH = 40
MAX_EF_SEARCH = 1000


def _candidate_sql(scope: SearchScope, dimensions: int, model: str | None) -> tuple[str, list[Any]]:
    where, params = scope_filter("e", scope)
    where = f"e.dimensions = {int(dimensions)} AND {where}"
    if model is not None:
        where += " AND e.model = %s"
        params.append(model)
    return where, params


def _estimate_rows(cursor: Any, where: str, params: list[Any]) -> float:
    cursor.execute(f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {EMBEDDING} e WHERE {where}", params)
    plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return float(plan[0]["Plan"]["Plan Rows"])


def _total_rows(cursor: Any, dimensions: int, tenant_id: int) -> float:
    cursor.execute(
        f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {EMBEDDING} e WHERE e.dimensions = %s AND e.tenant_id = %s",
        [dimensions, tenant_id],
    )
    plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return max(float(plan[0]["Plan"]["Plan Rows"]), 1.0)


def _hydrate_sql(inner: str) -> str:
    return (
        f"SELECT e.chunk_id, c.document_id, c.chunk_index, 1 - e.dist, c.content, d.title, d.source_url, "
        f"c.tenant_id FROM ({inner}) e JOIN {CHUNK} c ON c.id = e.chunk_id "
        f"JOIN {DOCUMENT} d ON d.id = c.document_id ORDER BY e.dist, e.chunk_id"
    )


def choose_ef_search(limit: int, visible_fraction: float) -> int:
    """Candidate-list size for iterative HNSW: enough that ~limit visible rows survive the filter."""
    wanted = limit * 4 / max(visible_fraction, 1e-3)
    return int(min(MAX_EF_SEARCH, max(MIN_EF_SEARCH, math.ceil(wanted))))


def vector_search(
    scope: SearchScope,
    query: Sequence[float],
    dimensions: int,
    limit: int,
    *,
    model: str | None,
    timeout_ms: int,
    exact_scan_max_rows: int,
) -> list[LaneHit]:
    if scope.sees_nothing or limit <= 0:
        return []
    if len(query) != dimensions:
        raise ValueError(f"query vector has {len(query)} dimensions, expected {dimensions}")
    where, params = _candidate_sql(scope, dimensions, model)
    qvec = vector_literal(query)
    indexed = dimensions in INDEXED_DIMENSIONS
    estimate, fraction = 0.0, 1.0
    if indexed:
        with lane_settings(timeout_ms) as cursor:
            estimate = _estimate_rows(cursor, where, params)
            fraction = min(1.0, estimate / _total_rows(cursor, dimensions, scope.tenant_id))
    if not indexed or estimate <= exact_scan_max_rows:
        # Exact: the un-cast expression cannot use the HNSW index, so every visible row is ranked.
        inner = (
            f"SELECT e.chunk_id, e.embedding <=> %s::vector AS dist FROM {EMBEDDING} e "
            f"WHERE {where} ORDER BY dist, e.chunk_id LIMIT %s"
        )
        gucs: dict[str, str | int] = {}
    else:
        cast = f"vector({int(dimensions)})"
        inner = (
            f"SELECT e.chunk_id, e.embedding::{cast} <=> %s::{cast} AS dist FROM {EMBEDDING} e "
            f"WHERE {where} ORDER BY dist LIMIT %s"
        )
        gucs = {
            "hnsw.ef_search": choose_ef_search(limit, fraction),
            "hnsw.iterative_scan": "relaxed_order",
            "hnsw.max_scan_tuples": 50000,
        }
    with lane_settings(timeout_ms, **gucs) as cursor:
        cursor.execute(_hydrate_sql(inner), [qvec, *params, limit])
        return rows_to_hits(cursor.fetchall())
