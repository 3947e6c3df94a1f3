"""A search hit as the API returns it (keyword scores already withheld by knowledge.search.disclosure)."""

from __future__ import annotations

import math
from typing import Any

from knowledge.pipeline.registry import configured_name
from knowledge.search import SearchHit


def _finite(score: float | None) -> float | None:
    """JSON has no NaN: a score that is not a number (e.g. cosine of a zero vector) is reported as null."""
    return score if score is None or math.isfinite(score) else None


def render_hit(
    hit: SearchHit,
    external_ids: dict[int, str],
    tenant_slug: str,
    *,
    explain: bool,
) -> dict[str, Any]:
    """The API's result object for one hit."""
    row: dict[str, Any] = {
        "id": hit.chunk_id,
        "document_id": external_ids.get(hit.document_id, ""),
        "chunk_index": hit.chunk_index,
        "source_account_id": tenant_slug,
        "title": hit.title,
        "content": hit.content,
        "source_url": hit.source_url,
        "page": hit.page,
        "score": hit.rrf_score,
        "rrf_score": hit.rrf_score,
        "similarity": _finite(hit.similarity),
        "text_rank": _finite(hit.text_rank),
        "parent_content": hit.parent_content,
        "excerpts": list(hit.excerpts),
        "matched_queries": list(hit.matched_queries),
    }
    if explain:
        row["explain"] = {
            "lane_ranks": hit.lane_ranks,
            "lane_scores": {"vector": row["similarity"], "keyword": row["text_rank"]},
            "fusion": configured_name("fuser"),
            "fusion_terms": hit.fusion_terms,
        }
    return row
