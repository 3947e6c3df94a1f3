"""Pushes canonical document state to the retrieval backend; retrying converges on the same state."""

from __future__ import annotations

from collections.abc import Sequence

from knowledge.models import Document
from knowledge.services.access import document_state
from retrieval_backends.registry import get_backend


def documents_index_sync(*, document_ids: Sequence[int]) -> dict[str, int]:
    """Mirror each document's state; documents gone from PostgreSQL are deleted from the index."""
    backend = get_backend()
    documents = list(Document.objects.filter(pk__in=document_ids).prefetch_related("allowed_principals"))
    present = {d.pk for d in documents}
    missing = sorted(set(document_ids) - present)
    backend.sync_document_access([document_state(document=d) for d in documents])
    if missing:
        backend.sync_document_deletions(missing)
    return {"synced": len(documents), "deleted": len(missing)}
