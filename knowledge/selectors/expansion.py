"""Parent expansion: a child chunk's hit is answered with its parent's text, once per parent.

With the parent-child chunker, small children match precisely and their parent (a chunk of the same
document, at `parent_index`) gives the context. Parents and children are both indexed, so a parent
and its children collapse into one hit at the best rank any of them reached.
"""

from __future__ import annotations

from dataclasses import replace

from django.db import connection
from django.db.models import Q

from knowledge.models import Chunk
from knowledge.pipeline.fusers.base import FusedHit

# Asked on every search, and usually answered by no rows: plain SQL, one round trip, no ORM compile.
PARENTS_SQL = "SELECT id, parent_index FROM knowledge_chunk WHERE id = ANY(%s) AND parent_index IS NOT NULL"


def _parent_indexes(chunk_ids: list[int]) -> dict[int, int]:
    if not chunk_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(PARENTS_SQL, [chunk_ids])
        return dict(cursor.fetchall())


def expand_to_parents(fused: list[FusedHit]) -> list[FusedHit]:
    """Replace child hits by their parents (same score and lane data) and drop repeats."""
    parents = _parent_indexes([f.chunk_id for f in fused])
    if not parents:
        return fused
    wanted = {(f.hit.document_id, parents[f.chunk_id]) for f in fused if f.chunk_id in parents}
    query = Q()
    for document_id, index in wanted:
        query |= Q(document_id=document_id, chunk_index=index)
    by_position = {(c.document_id, c.chunk_index): c for c in Chunk.objects.filter(query)}
    expanded, seen = [], set()
    for f in fused:
        position = (f.hit.document_id, parents.get(f.chunk_id, f.hit.chunk_index))
        if position in seen:
            continue
        seen.add(position)
        parent = by_position.get(position) if f.chunk_id in parents else None
        if parent is not None:
            hit = replace(f.hit, chunk_id=parent.pk, chunk_index=parent.chunk_index, content=parent.content)
            f = replace(f, chunk_id=parent.pk, hit=hit)
        expanded.append(f)
    return expanded
