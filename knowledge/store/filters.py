"""Keeps the filter columns of canonical chunks and vectors in step with their documents' state."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.db import connection, transaction

from knowledge.store.sql import CHUNK, EMBEDDING
from retrieval_backends.types import DocumentState

STATES = """unnest(%s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[], %s::bool[], %s::text[])
     AS s(document_id, tenant_id, connector_id, environment_id, is_deleted, acl)"""
SET_AND_DIFFER = """SET tenant_id = s.tenant_id, connector_id = s.connector_id,
    environment_id = s.environment_id, is_deleted = s.is_deleted,
    acl_tokens = ARRAY(SELECT jsonb_array_elements_text(s.acl::jsonb))::varchar[]
FROM {source}
WHERE {match} AND (t.tenant_id, t.connector_id, t.environment_id, t.is_deleted, t.acl_tokens)
      IS DISTINCT FROM (s.tenant_id, s.connector_id, s.environment_id, s.is_deleted,
                        ARRAY(SELECT jsonb_array_elements_text(s.acl::jsonb))::varchar[])"""
SYNC_CHUNKS = f"UPDATE {CHUNK} t " + SET_AND_DIFFER.format(
    source=STATES, match="t.document_id = s.document_id"
)
SYNC_VECTORS = f"UPDATE {EMBEDDING} t " + SET_AND_DIFFER.format(
    source=f"{STATES} JOIN {CHUNK} c ON c.document_id = s.document_id", match="t.chunk_id = c.id"
)


def update_document_filters(states: Sequence[DocumentState]) -> int:
    """Write each document's tenant, connector, environment, deletion state and ACL tokens onto its
    chunks, then onto their vectors; rows already in step are not rewritten. Returns rows changed.

    Chunks are updated before vectors, so a concurrent backfill that copies a chunk's filters (under a
    share lock on the chunk row) either sees the new chunk or is corrected by the second statement.
    """
    if not states:
        return 0
    columns: list[Any] = [
        [s.document_id for s in states],
        [s.tenant_id for s in states],
        [s.connector_id for s in states],
        [s.environment_id for s in states],
        [s.is_deleted for s in states],
        [json.dumps(list(s.acl_tokens)) for s in states],
    ]
    changed = 0
    with transaction.atomic(), connection.cursor() as cursor:
        for statement in (SYNC_CHUNKS, SYNC_VECTORS):
            cursor.execute(statement, columns)
            changed += cursor.rowcount
    return changed
