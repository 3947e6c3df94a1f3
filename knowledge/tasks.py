"""Celery tasks: thin, id-based, idempotent wrappers around services."""

from __future__ import annotations

from celery import shared_task

from retrieval_backends.base import BackendUnavailable


@shared_task(
    bind=True,
    acks_late=True,
    autoretry_for=(BackendUnavailable,),
    retry_backoff=True,
    retry_jitter=True,
    max_retries=8,
)
def sync_documents_to_index(self, document_ids: list[int]) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Push the current ACL/environment/deletion state of documents to the retrieval backend."""
    from knowledge.services.index_sync import documents_index_sync

    return documents_index_sync(document_ids=document_ids)


@shared_task(acks_late=True)
def ping() -> str:
    """Round trip through the broker and a worker (used by health checks and tests)."""
    return "pong"
