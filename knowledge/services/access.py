"""Keeps the denormalised search filters of chunks and embeddings in step with their documents."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, transaction

from knowledge.models import Document, Principal
from knowledge.services.acl import acl_tokens, document_acl_tokens, tokens_for
from knowledge.services.enqueue import schedule_index_sync
from retrieval_backends.types import DocumentState

__all__ = [
    "acl_tokens",
    "document_access_sync",
    "document_acl_tokens",
    "documents_access_sync",
    "schedule_index_sync",
]


def document_states(*, document_ids: Sequence[int]) -> list[DocumentState]:
    """What an index must mirror about each existing document, read in three queries."""
    rows = list(
        Document.objects.filter(pk__in=document_ids).values_list(
            "pk", "tenant_id", "connector_id", "environment_id", "is_public", "deleted_at"
        )
    )
    grants: dict[int, list[int]] = defaultdict(list)
    through = Document.allowed_principals.through
    for document_id, principal_id in through.objects.filter(document_id__in=[r[0] for r in rows]).values_list(
        "document_id", "principal_id"
    ):
        grants[document_id].append(principal_id)
    kinds = dict(
        Principal.objects.filter(pk__in={p for ids in grants.values() for p in ids}).values_list("pk", "kind")
    )
    return [
        DocumentState(
            document_id=pk,
            tenant_id=tenant_id,
            connector_id=connector_id,
            environment_id=environment_id,
            acl_tokens=tuple(tokens_for(is_public=is_public, principal_ids=grants[pk], kinds=kinds)),
            is_deleted=deleted_at is not None,
        )
        for pk, tenant_id, connector_id, environment_id, is_public, deleted_at in rows
    ]


def document_state(*, document: Document) -> DocumentState:
    """What an index must mirror about the document."""
    return document_states(document_ids=[document.pk])[0]


STATES = """unnest(%s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[], %s::bool[], %s::text[])
     AS s(document_id, tenant_id, connector_id, environment_id, is_deleted, acl)"""
SET_AND_DIFFER = """SET tenant_id = s.tenant_id, connector_id = s.connector_id,
    environment_id = s.environment_id, is_deleted = s.is_deleted,
    acl_tokens = ARRAY(SELECT jsonb_array_elements_text(s.acl::jsonb))::varchar[]
FROM {source}
WHERE {match} AND (t.tenant_id, t.connector_id, t.environment_id, t.is_deleted, t.acl_tokens)
      IS DISTINCT FROM (s.tenant_id, s.connector_id, s.environment_id, s.is_deleted,
                        ARRAY(SELECT jsonb_array_elements_text(s.acl::jsonb))::varchar[])"""
SYNC_CHUNKS = "UPDATE knowledge_chunk t " + SET_AND_DIFFER.format(
    source=STATES, match="t.document_id = s.document_id"
)
SYNC_VECTORS = "UPDATE knowledge_chunkembedding t " + SET_AND_DIFFER.format(
    source=f"{STATES} JOIN knowledge_chunk c ON c.document_id = s.document_id", match="t.chunk_id = c.id"
)


def documents_access_sync(*, document_ids: Iterable[int]) -> int:
    """Copy ACL tokens, environment, connector, tenant and deletion state onto chunks and vectors.

    The one function that keeps the denormalised filters in step; idempotent (rows already in step
    are not rewritten). Chunks are updated before vectors, so a concurrent backfill that copies a
    chunk's filters (under a share lock on the chunk) sees either the old chunk and is then
    corrected here, or the new one. Returns the number of rows changed.
    """
    states = document_states(document_ids=sorted(set(document_ids)))
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
        schedule_index_sync([s.document_id for s in states])
    return changed


def document_access_sync(*, document: Document) -> int:
    """`documents_access_sync` for one document."""
    return documents_access_sync(document_ids=[document.pk])
