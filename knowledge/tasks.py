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


@shared_task(acks_late=True)
def sync_connector(connector_id: int) -> dict[str, object]:
    """Sync one filesystem or web connector (skipped when another worker holds it)."""
    from knowledge.models import Connector
    from knowledge.services.connector_sync import connector_sync

    connector = Connector.objects.filter(pk=connector_id).first()
    if connector is None:
        return {"claimed": False, "reason": "connector no longer exists"}
    outcome = connector_sync(connector=connector)
    return {
        "claimed": outcome.claimed,
        "documents": outcome.stats.documents if outcome.stats else 0,
        "deleted": outcome.deleted,
        "errors": list(outcome.errors),
    }


@shared_task(acks_late=True)
def sync_due_connectors() -> list[int]:
    """Periodic (Celery beat): queue a sync for every connector whose interval has passed."""
    from knowledge.services.connector_sync import connectors_due

    due = connectors_due()
    for connector_id in due:
        sync_connector.delay(connector_id)
    return due
