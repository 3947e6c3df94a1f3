"""The search audit log's batch write: one COPY per batch, from plain tuples (no model instances)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from django.db import connection
from psycopg.types.json import Jsonb

from knowledge.models import SearchAudit

TABLE = SearchAudit._meta.db_table


class SearchEntry(NamedTuple):
    """One search as the log keeps it (the columns of SearchAudit but its id)."""

    created_at: Any
    tenant_id: int
    api_key_id: int | None
    staff_user: str
    actor: str
    principal: str
    query_hash: str
    query_text: str
    filters: dict[str, Any]
    document_ids: list[int]


_COLUMN_OF = {field.attname: field.column for field in SearchAudit._meta.concrete_fields}
COLUMNS = ", ".join(f'"{_COLUMN_OF[name]}"' for name in SearchEntry._fields)  # KeyError if one is renamed


def search_entries_copy(entries: Sequence[SearchEntry]) -> int:
    """Append the entries to the log in one COPY (in the calling thread's connection); how many."""
    if not entries:
        return 0
    with connection.cursor() as cursor:
        raw = cursor.cursor  # the psycopg cursor under Django's wrapper
        with raw.copy(f"COPY {TABLE} ({COLUMNS}) FROM STDIN") as copy:
            for entry in entries:
                copy.write_row((*entry[:8], Jsonb(entry.filters), entry.document_ids))
    return len(entries)
