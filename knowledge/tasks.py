"""Celery tasks: thin, id-based, idempotent wrappers around services."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.db import InterfaceError, OperationalError

from knowledge.models import Connector
from knowledge.services.audit import audit_purge
from knowledge.services.connector_sync import connector_sync, connectors_due
from knowledge.services.deletion import connector_purge_run
from knowledge.services.enqueue import SYNC_CONNECTOR, send_task
from knowledge.services.index_sync import documents_index_sync, index_reconcile
from retrieval_backends.base import BackendUnavailable

# Transient failures worth retrying: the index or PostgreSQL briefly unreachable.
TRANSIENT = (BackendUnavailable, OperationalError, InterfaceError)
RETRYING: dict[str, Any] = {
    "bind": True,
    "acks_late": True,
    "autoretry_for": TRANSIENT,
    "retry_backoff": True,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 8,
}


@shared_task(**RETRYING)
def sync_documents_to_index(self, document_ids: list[int]) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Push the absolute state of documents to the retrieval backend (a speed-up: the reconciler
    pushes whatever this misses)."""
    return documents_index_sync(document_ids=document_ids)


@shared_task(acks_late=True)
def reconcile_index() -> dict[str, object]:
    """Periodic (Celery beat): push every dirty document and tombstone, under one lock."""
    stats = index_reconcile()
    return {"ran": stats.ran, "pushed": stats.pushed, "deleted": stats.deleted, "failed": stats.failed}


@shared_task(acks_late=True)
def ping() -> str:
    """Round trip through the broker and a worker (used by health checks and tests)."""
    return "pong"


@shared_task(acks_late=True)
def sync_connector(connector_id: int, full: bool = False) -> dict[str, object]:
    """Sync one pull connector (skipped when another worker holds it); `full` re-pushes everything."""
    connector = Connector.objects.filter(pk=connector_id).first()
    if connector is None:
        return {"claimed": False, "reason": "connector no longer exists"}
    outcome = connector_sync(connector=connector, full=full)
    return {
        "claimed": outcome.claimed,
        "documents": outcome.stats.documents if outcome.stats else 0,
        "deleted": outcome.deleted,
        "errors": list(outcome.errors),
    }


@shared_task(**RETRYING)
def purge_connector(self, connector_id: int, run_id: int | None = None) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Delete every document of a connector in batches (resumable: a retry continues where it stopped)."""
    return {"deleted": connector_purge_run(connector_id=connector_id, run_id=run_id)}


@shared_task(acks_late=True)
def sync_due_connectors() -> list[int]:
    """Periodic (Celery beat): queue a sync for every connector whose interval has passed."""
    due = connectors_due()
    for connector_id in due:
        send_task(SYNC_CONNECTOR, connector_id)
    return due


@shared_task(acks_late=True)
def purge_audit_log() -> int:
    """Delete audit entries past KNOWLEDGE_AUDIT_RETENTION_DAYS (hourly; idempotent)."""
    return audit_purge()
