"""The reads a search makes of its hits: their text and citation fields, and their parents."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection

from knowledge.store.tables import CHUNK, DOCUMENT

HYDRATE_SQL = (
    f"SELECT c.id, c.content, d.title, d.source_url, c.page, d.external_id FROM {CHUNK} c "
    f"JOIN {DOCUMENT} d ON d.id = c.document_id WHERE c.id = ANY(%s)"
)
# Plain SQL, one round trip, no ORM compile: on the search's critical path.
PARENTS_SQL = f"SELECT id, parent_index FROM {CHUNK} WHERE id = ANY(%s) AND parent_index IS NOT NULL"


def hit_texts(chunk_ids: Sequence[int]) -> dict[int, tuple[Any, ...]]:
    """chunk id -> (content, title, source URL, page, document external id); gone chunks are absent."""
    if not chunk_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(HYDRATE_SQL, [list(chunk_ids)])
        return {row[0]: tuple(row[1:]) for row in cursor.fetchall()}


def parent_indexes(chunk_ids: Sequence[int]) -> dict[int, int]:
    """chunk id -> parent chunk index, for those of the chunks that are children."""
    if not chunk_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(PARENTS_SQL, [list(chunk_ids)])
        return dict(cursor.fetchall())
