"""Keyword lane: OR-semantics full-text search over the chunk tsvectors, ranked by one swappable function."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from knowledge.store.sql import CHUNK, DOCUMENT, lane_fetch, rows_to_hits, scope_filter
from retrieval_backends.types import LaneHit, SearchScope, keyword_lane_can_match

# AND semantics (plainto/websearch_to_tsquery) match nothing for most natural-language questions, so
# every query lexeme is OR-ed; ranking then rewards chunks that match more, and rarer, terms.
QUERIES_CTE = """
WITH q AS (
    SELECT cfg.cfgname::text AS language,
           replace(plainto_tsquery(cfg.oid::regconfig, %s)::text, ' & ', ' | ')::tsquery AS tsq
    FROM pg_ts_config cfg
    WHERE cfg.cfgname = ANY(%s)
)
"""


def rank_sql(vector: str, query: str) -> str:
    """The ranking expression of the keyword lane (ts_rank with length normalisation 1)."""
    return f"ts_rank({vector}, {query}, 1)"


def keyword_search(
    scope: SearchScope, query_text: str, languages: Sequence[str], limit: int, *, timeout_ms: int
) -> list[LaneHit]:
    if not keyword_lane_can_match(scope, query_text, languages, limit):
        return []
    where, params = scope_filter("c", scope)
    sql = (
        QUERIES_CTE
        + f"""
SELECT c.id, c.document_id, c.chunk_index, s.score, c.content, d.title, d.source_url, c.tenant_id,
       c.parent_index
FROM (
    SELECT c.id, {rank_sql("c.search_vector", "q.tsq")} AS score
    FROM {CHUNK} c JOIN q ON c.language = q.language
    WHERE q.tsq::text <> '' AND c.search_vector @@ q.tsq AND {where}
    ORDER BY score DESC, c.id
    LIMIT %s
) s
JOIN {CHUNK} c ON c.id = s.id JOIN {DOCUMENT} d ON d.id = c.document_id
ORDER BY s.score DESC, c.id
"""
    )
    args: list[Any] = [query_text, list(languages), *params, limit]
    [rows] = lane_fetch(timeout_ms, [(sql, args)])
    return rows_to_hits(rows)
