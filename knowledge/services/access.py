"""Keeps the denormalised search filters of chunks and embeddings in step with their documents."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import transaction

from knowledge.models import Document
from knowledge.services.acl import acl_tokens, document_acl_tokens, document_grants, tokens_for
from knowledge.services.enqueue import schedule_index_sync
from knowledge.store.filters import update_document_filters
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
    grants, kinds = document_grants(r[0] for r in rows)
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


def documents_access_sync(*, document_ids: Iterable[int]) -> int:
    """Copy ACL tokens, environment, connector, tenant and deletion state onto the documents' chunks
    and vectors, in the caller's transaction, through the retrieval backend (the one way a
    document's filter state reaches whichever index serves it); an external index is told after
    commit. Idempotent. Returns the number of rows changed.
    """
    states = document_states(document_ids=sorted(set(document_ids)))
    if not states:
        return 0
    with transaction.atomic():
        changed = update_document_filters(states)
        schedule_index_sync([s.document_id for s in states])
    return changed


def document_access_sync(*, document: Document) -> int:
    """`documents_access_sync` for one document."""
    return documents_access_sync(document_ids=[document.pk])
