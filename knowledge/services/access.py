"""Keeps the denormalised search filters of chunks and embeddings in step with their documents."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from knowledge.access.state import document_states
from knowledge.models import Document
from knowledge.services.enqueue import schedule_index_sync
from knowledge.store.filters import update_document_filters
from retrieval_backends.types import DocumentState

__all__ = ["document_access_sync", "documents_access_sync", "schedule_index_sync"]


def document_state(*, document: Document) -> DocumentState:
    """What an index must mirror about the document."""
    return document_states(document_ids=[document.pk])[0]


def documents_access_sync(*, document_ids: Iterable[int]) -> int:
    """Copy ACL tokens, environment, connector, tenant and deletion state onto the documents' chunks
    and vectors, in the caller's transaction (what PostgreSQL's own index filters on); an external
    index is told after commit. Idempotent. Returns the number of rows changed.
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
