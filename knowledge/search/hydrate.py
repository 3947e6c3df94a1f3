"""Text and citation fields (title, URL, page) of the hits a search keeps, read once for its pool.

Lanes rank by ids and scores: reading the text of every candidate (50 a lane) cost more than the
ranking itself. The PostgreSQL lanes read it for their first hits only (2 x the limit, in the
lane's own statement), which nearly always hold the answer; other hits may come back without text
(`content` None, as the contract allows), and the pool that is reranked and returned gets it here,
in one statement. Visibility was decided by the lane's own statement; a chunk deleted since is
dropped. Hits that carry text (the lanes' first ones, verified hits of an external index) are left
as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from knowledge.pipeline.fusers.base import FusedHit
from knowledge.store.hits import hit_texts
from retrieval_backends.types import PAGE_UNKNOWN, LaneHit


def lacks_text(hit: LaneHit) -> bool:
    """Whether nothing has read the hit's text and citation fields yet."""
    return hit.content is None or hit.page == PAGE_UNKNOWN


def with_text(
    fused: FusedHit,
    content: str | None,
    title: str | None,
    source_url: str | None,
    page: int | None,
    external_id: str | None,
) -> FusedHit:
    """The fused hit with these text and citation fields."""
    hit = replace(
        fused.hit,
        content=content,
        title=title,
        source_url=source_url,
        page=page,
        document_external_id=external_id,
    )
    return replace(fused, hit=hit)


def with_lane_text(fused: list[FusedHit], lane_hits: Mapping[str, Sequence[LaneHit]]) -> list[FusedHit]:
    """A fused hit keeps one lane's hit; where only another lane read the chunk's text (a lane may
    read it for its first hits), the text comes from there, so the search need not read it again."""
    read = {
        h.chunk_id: (h.content, h.title, h.source_url, h.page, h.document_external_id)
        for hits in lane_hits.values()
        for h in hits
        if not lacks_text(h)
    }
    return [with_text(f, *read[f.chunk_id]) if lacks_text(f.hit) and f.chunk_id in read else f for f in fused]


def hydrate_hits(fused: list[FusedHit]) -> list[FusedHit]:
    """The hits with their text and citation fields, in order; hits whose chunk is gone are dropped."""
    missing = [f.chunk_id for f in fused if lacks_text(f.hit)]
    if not missing:
        return fused
    rows = hit_texts(missing)
    return [
        with_text(f, *rows[f.chunk_id]) if lacks_text(f.hit) else f
        for f in fused
        if not lacks_text(f.hit) or f.chunk_id in rows
    ]
