"""Which hits are children, and of which parent (for the `parent_expand` stage).

With the parent-child chunker, small children match precisely and their parent (a chunk of the same
document, at `parent_index`) gives the context. The lanes of the PostgreSQL backend report each hit's
parent index, so this usually costs no statement at all.
"""

from __future__ import annotations

from django.db import connection

from knowledge.pipeline.fusers.base import FusedHit
from retrieval_backends.types import PARENT_UNKNOWN

# Only for hits whose parent the lanes did not report (PostgreSQL's own rows and canonical
# verification do): plain SQL, one round trip, no ORM compile.
PARENTS_SQL = "SELECT id, parent_index FROM knowledge_chunk WHERE id = ANY(%s) AND parent_index IS NOT NULL"


def parent_indexes(fused: list[FusedHit]) -> dict[int, int]:
    """chunk id -> parent chunk index, for the hits that are children (one statement at most)."""
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
