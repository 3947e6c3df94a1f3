"""A search hit as the API returns it, with the keyword lane's scores shown only to whom they may be.

BM25 scores come from statistics (document frequencies, average length) that count every chunk of the
tenant, including those the caller cannot see, so a score lets a caller estimate how many hidden chunks
contain a term. With KNOWLEDGE_KEYWORD_SCORES=bypass (the default) a caller without bypass_acl gets no
keyword score: `text_rank` and explain's keyword `lane_scores` are null. What stays is relative: the
order, and the fused score, which every fuser computes from ranks (RRF) or from scores normalised
within the answer (z-score, DBSF, weighted min-max), so the scale that carries a term's document
frequency cancels out; only how the question's terms weigh against each other remains, as it does in
the order. The vector lane's similarities stay too (they depend on the chunk and the question alone).
"""

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
    keyword_scores: bool,
) -> dict[str, Any]:
    """The API's result object for one hit (`keyword_scores`: knowledge.search.disclosure decides)."""
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
        "text_rank": _finite(hit.text_rank) if keyword_scores else None,
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
