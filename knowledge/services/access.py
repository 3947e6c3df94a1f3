"""Keeps the denormalised search filters of chunks and embeddings in step with their document."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection, transaction

from knowledge.models import Document, Principal
from retrieval_backends.types import PUBLIC_TOKEN, DocumentState


def acl_tokens(*, is_public: bool, principals: Iterable[Principal]) -> list[str]:
    """The ACL tokens chunks carry: `public` and `u:<id>` / `g:<id>` of the allowed principals."""
    tokens = {p.acl_token for p in principals}
    if is_public:
        tokens.add(PUBLIC_TOKEN)
    return sorted(tokens)


def document_acl_tokens(*, document: Document) -> list[str]:
    """The ACL tokens a stored document's chunks carry."""
    return acl_tokens(is_public=document.is_public, principals=document.allowed_principals.all())


def document_state(*, document: Document) -> DocumentState:
    """What an index must mirror about the document."""
    return DocumentState(
        document_id=document.pk,
        tenant_id=document.tenant_id,
        connector_id=document.connector_id,
        environment_id=document.environment_id,
        acl_tokens=tuple(document_acl_tokens(document=document)),
        is_deleted=document.deleted_at is not None,
    )


SYNC_SQL = """
UPDATE {table} t SET tenant_id = %s, connector_id = %s, environment_id = %s, is_deleted = %s,
                     acl_tokens = %s::varchar[]
WHERE {match}
  AND (t.tenant_id, t.connector_id, t.environment_id, t.is_deleted, t.acl_tokens)
      IS DISTINCT FROM (%s, %s, %s, %s, %s::varchar[])
"""


def document_access_sync(*, document: Document) -> int:
    """Copy ACL tokens, environment, connector, tenant and deletion state onto chunks and vectors.

    The one function that keeps the denormalised filters in step; idempotent (rows already in step
    are not rewritten). Returns the number of rows changed. An external index is told on commit.
    """
    state = document_state(document=document)
    values = [
        state.tenant_id,
        state.connector_id,
        state.environment_id,
        state.is_deleted,
        list(state.acl_tokens),
    ]
    changed = 0
    with transaction.atomic(), connection.cursor() as cursor:
        for table, match in (
            ("knowledge_chunk", "t.document_id = %s"),
            (
                "knowledge_chunkembedding",
                "t.chunk_id IN (SELECT id FROM knowledge_chunk WHERE document_id = %s)",
            ),
        ):
            cursor.execute(SYNC_SQL.format(table=table, match=match), [*values, document.pk, *values])
            changed += cursor.rowcount
        schedule_index_sync([document.pk])
    return changed


def schedule_index_sync(document_ids: Iterable[int]) -> None:
    """After commit, push the documents' state to the retrieval backend (a no-op for PostgreSQL)."""
    from knowledge.tasks import sync_documents_to_index
    from retrieval_backends.registry import get_backend

    ids = sorted(set(document_ids))
    if ids and get_backend().requires_index_sync:
        transaction.on_commit(lambda: sync_documents_to_index.delay(ids))
