"""Statistics of the search tables: the planner's, after bulk writes, and the keyword lane's BM25 ones.

The search tables are analyzed once a load changed many rows.

The keyword lane's plan no longer depends on them, but every other query does (filters, the vector
lane's visibility estimates), and autovacuum may take minutes to get to a freshly loaded table.
"""

from __future__ import annotations

from django.db import connection

from knowledge.store.search import bm25
from knowledge.store.tables import SEARCH_TABLES

BULK_CHUNKS = 1000


def tables_analyze_after_bulk_write(*, chunks_written: int) -> bool:
    """ANALYZE the search tables when at least BULK_CHUNKS chunks were written; whether it ran."""
    if chunks_written < BULK_CHUNKS:
        return False
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {', '.join(SEARCH_TABLES)}")
    return True


def rebuild_keyword_statistics(*, tenant_id: int | None) -> None:
    """Recompute lexeme counts, BM25 statistics and term weights from the chunks (every tenant when
    None). Run inside a transaction: the chunk table is locked against writes until it commits."""
    with connection.cursor() as cursor:
        bm25.rebuild_statistics(cursor, tenant_id)
