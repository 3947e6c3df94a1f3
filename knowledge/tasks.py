"""Celery tasks: thin, id-based, idempotent wrappers around services."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from knowledge.models import Connector
from knowledge.services.audit import audit_purge
from knowledge.services.connector_sync import connector_sync, connectors_due
from knowledge.services.deletion import connector_purge_run
from knowledge.services.enqueue import (
    RUN_INGEST_JOB,
    SYNC_CONNECTOR,
    SYNC_PERMISSIONS,
    pushes_inline,
    send_task,
)
from knowledge.services.index_sync import documents_index_sync, index_reconcile
from knowledge.services.jobs import job_run, jobs_purge, jobs_resume
from knowledge.services.permission_sync import connector_permissions_sync, connectors_permissions_due
from knowledge.services.vector_indexes import serving_vector_indexes_maintain
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


def _push(document_ids: list[int]) -> object:
    """Bulk tasks push their own writes (see `pushes_inline`), keeping the priority queue free."""
    return documents_index_sync(document_ids=document_ids)


@shared_task(**RETRYING)
def sync_documents_to_index(self, document_ids: list[int]) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Push the absolute state of documents to the retrieval backend (a speed-up: the reconciler
    pushes whatever this misses)."""
    return documents_index_sync(document_ids=document_ids)


@shared_task(acks_late=True)
def reconcile_index() -> dict[str, object]:
    """Periodic (Celery beat): push every dirty document and tombstone, under one lock."""
    stats = index_reconcile(time_budget=settings.KNOWLEDGE_RECONCILE_BUDGET_SECONDS)
    return {"ran": stats.ran, "pushed": stats.pushed, "deleted": stats.deleted, "failed": stats.failed}


@shared_task(acks_late=True, ignore_result=False)
def ping() -> str:
    """Round trip through the broker and a worker (used by health checks and tests)."""
    return "pong"


@shared_task(acks_late=True)
def sync_connector(connector_id: int, full: bool = False) -> dict[str, object]:
    """Sync one pull connector (skipped when another worker holds it); `full` re-pushes everything."""
    connector = Connector.objects.filter(pk=connector_id).first()
    if connector is None:
        return {"claimed": False, "reason": "connector no longer exists"}
    with pushes_inline(_push):
        outcome = connector_sync(connector=connector, full=full)
    return {
        "claimed": outcome.claimed,
        "documents": outcome.stats.documents if outcome.stats else 0,
        "deleted": outcome.deleted,
        "errors": list(outcome.errors),
    }


@shared_task(acks_late=True)
def sync_connector_permissions(connector_id: int) -> dict[str, object]:
    """Re-read a connector's permissions and groups (no content); skipped while it syncs."""
    connector = Connector.objects.filter(pk=connector_id).first()
    if connector is None:
        return {"claimed": False, "reason": "connector no longer exists"}
    with pushes_inline(_push):
        outcome = connector_permissions_sync(connector=connector)
    return {"claimed": outcome.claimed, "changed": outcome.changed, "errors": list(outcome.errors)}


@shared_task(acks_late=True)
def sync_due_permissions() -> list[int]:
    """Periodic (Celery beat): queue a permission sync for every connector whose interval passed."""
    due = connectors_permissions_due()
    for connector_id in due:
        send_task(SYNC_PERMISSIONS, connector_id)
    return due


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


@shared_task(**RETRYING)
def run_ingest_job(self, job_id: int) -> str | None:  # type: ignore[no-untyped-def]
    """Write an ingest job's documents (queue `bulk`); past the time budget, hand on to a new message.
    A lost message or a dead worker is covered by `resume_ingest_jobs`."""
    with pushes_inline(_push):
        outcome = job_run(job_id=job_id, seconds=settings.KNOWLEDGE_JOB_TASK_SECONDS)
    if outcome.out_of_time:
        send_task(RUN_INGEST_JOB, job_id)
    return outcome.state


@shared_task(acks_late=True)
def resume_ingest_jobs() -> list[int]:
    """Periodic (Celery beat): wake every unfinished job nobody has touched lately."""
    return jobs_resume()


@shared_task(acks_late=True)
def purge_ingest_jobs() -> int:
    """Periodic (Celery beat): delete finished jobs past KNOWLEDGE_JOB_RETENTION_DAYS."""
    return jobs_purge()


@shared_task(acks_late=True)
def maintain_vector_indexes() -> dict[str, object]:
    """Periodic (Celery beat, queue `bulk`): give each tenant past the threshold its own HNSW graph and
    drop the graphs of tenants that shrank; a no-op when the serving backend is not PostgreSQL."""
    report = serving_vector_indexes_maintain()
    return {} if report is None else {"created": report.created, "dropped": report.dropped,
                                      "failed": report.failed, "skipped": report.skipped}  # fmt: skip
