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

from dataclasses import replace

from django.db import connection

from knowledge.pipeline.fusers.base import FusedHit
from retrieval_backends.types import PAGE_UNKNOWN

HYDRATE_SQL = (
    "SELECT c.id, c.content, d.title, d.source_url, c.page, d.external_id FROM knowledge_chunk c "
    "JOIN knowledge_document d ON d.id = c.document_id WHERE c.id = ANY(%s)"
)


def hydrate_hits(fused: list[FusedHit]) -> list[FusedHit]:
    """The hits with their text and citation fields, in order; hits whose chunk is gone are dropped."""
    missing = [f.chunk_id for f in fused if f.hit.content is None or f.hit.page == PAGE_UNKNOWN]
    if not missing:
        return fused
    with connection.cursor() as cursor:
        cursor.execute(HYDRATE_SQL, [missing])
        rows = {row[0]: row[1:] for row in cursor.fetchall()}
    hydrated = []
    for f in fused:
        if f.hit.content is None or f.hit.page == PAGE_UNKNOWN:
            if f.chunk_id not in rows:
                continue
            content, title, url, page, external_id = rows[f.chunk_id]
            hit = replace(f.hit, content=content, title=title, source_url=url, page=page)
            f = replace(f, hit=replace(hit, document_external_id=external_id))
        hydrated.append(f)
    return hydrated
