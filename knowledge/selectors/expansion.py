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
from retrieval_backends.types import PARENT_UNKNOWN

# Only for hits whose parent the lanes did not report (PostgreSQL's own rows and canonical
# verification do): plain SQL, one round trip, no ORM compile.
PARENTS_SQL = "SELECT id, parent_index FROM knowledge_chunk WHERE id = ANY(%s) AND parent_index IS NOT NULL"


def _parent_indexes(fused: list[FusedHit]) -> dict[int, int]:
    parents = {
        f.chunk_id: f.hit.parent_index
        for f in fused
        if f.hit.parent_index is not None and f.hit.parent_index != PARENT_UNKNOWN
    }
    unknown = [f.chunk_id for f in fused if f.hit.parent_index == PARENT_UNKNOWN]
    if unknown:
        with connection.cursor() as cursor:
            cursor.execute(PARENTS_SQL, [unknown])
            parents.update(cursor.fetchall())
    return parents


def expand_to_parents(fused: list[FusedHit]) -> list[FusedHit]:
    """Replace child hits by their parents (same score and lane data) and drop repeats."""
    parents = _parent_indexes(fused)
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
