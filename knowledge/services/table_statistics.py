"""Planner statistics after bulk writes: the search tables are analyzed once a load changed many rows.

The keyword lane's plan no longer depends on them, but every other query does (filters, the vector
lane's visibility estimates), and autovacuum may take minutes to get to a freshly loaded table.
"""

from __future__ import annotations

from django.db import connection

BULK_CHUNKS = 1000
TABLES = ("knowledge_document", "knowledge_chunk", "knowledge_chunkembedding", "knowledge_keywordterm")


def tables_analyze_after_bulk_write(*, chunks_written: int) -> bool:
    """ANALYZE the search tables when at least BULK_CHUNKS chunks were written; whether it ran."""
    if chunks_written < BULK_CHUNKS:
        return False
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {', '.join(TABLES)}")
    return True
