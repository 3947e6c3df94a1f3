"""Creating, cancelling, resuming and purging ingest jobs (rows are the state; the broker only wakes)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from knowledge.errors import Conflict
from knowledge.models import ApiKey, Connector, IngestJob, IngestJobItem, Tenant
from knowledge.services.api_indexing import api_connector, api_source
from knowledge.services.enqueue import RUN_INGEST_JOB, send_after_commit, send_task
from knowledge.services.writes import documents_check

UNFINISHED = (IngestJob.State.QUEUED, IngestJob.State.RUNNING)


@dataclass(frozen=True)
class Submitted:
    """The job a request created, or (`replayed`) the one an earlier request with its key created."""

    job: IngestJob
    replayed: bool


def request_digest(documents: Sequence[dict[str, Any]]) -> str:
    """SHA-256 of the validated documents, key order aside: the same retry hashes the same."""
    text = json.dumps(list(documents), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def job_submit(
    *,
    tenant: Tenant,
    documents: Sequence[dict[str, Any]],
    api_key: ApiKey | None = None,
    idempotency_key: str = "",
    numbered: bool = True,
    connector: Connector | None = None,
    parallel: int = 1,
) -> Submitted:
    """Record a job of validated /index bodies (external ids unique) and wake a `bulk` worker.

    :raises KnowledgeError: a document the write would refuse (its field prefixed by its position
        when `numbered`), checked before anything is recorded.
    :raises Conflict: the idempotency key was used for a different request of this tenant, or the
        tenant's "api" connector is not an API connector.

    `connector`: another connector of the tenant (`manage.py ingest`); `parallel`: wake that many
    workers, which share the job's slices.
    """
    digest = request_digest(documents)
    if idempotency_key and (earlier := _keyed(tenant, idempotency_key)) is not None:
        return _replay(earlier, digest)
    connector = connector or api_connector(tenant=tenant)
    _check(connector, documents, numbered=numbered)
    try:
        with transaction.atomic():
            job = IngestJob.objects.create(
                tenant=tenant,
                connector=connector,
                api_key=api_key,
                idempotency_key=idempotency_key,
                request_hash=digest,
                total_documents=len(documents),
            )
            IngestJobItem.objects.bulk_create(
                [
                    IngestJobItem(
                        job=job, position=i, external_id=d["id"], chars=len(d["content"]), payload=d
                    )
                    for i, d in enumerate(documents)
                ],
                batch_size=500,
            )
            for _ in range(max(1, parallel)):
                send_after_commit(RUN_INGEST_JOB, job.pk)
    except IntegrityError:  # a concurrent retry with the same key committed first
        earlier = _keyed(tenant, idempotency_key) if idempotency_key else None
        if earlier is None:
            raise
        return _replay(earlier, digest)
    return Submitted(job=job, replayed=False)


def _check(connector: Connector, documents: Sequence[dict[str, Any]], *, numbered: bool) -> None:
    problems = documents_check(connector=connector, documents=[api_source(d) for d in documents])
    if problems:
        position, error = problems[0]
        field = error.field or "content"
        error.field = f"{position}.{field}" if numbered else field
        if numbered:
            error.message = f"document {position} ({documents[position]['id']!r}): {error.message}"
        raise error


def _keyed(tenant: Tenant, idempotency_key: str) -> IngestJob | None:
    return IngestJob.objects.filter(tenant=tenant, idempotency_key=idempotency_key).first()


def _replay(job: IngestJob, digest: str) -> Submitted:
    if job.request_hash != digest:
        raise Conflict(
            "this Idempotency-Key was used for a different request; use a new key for new content",
            field="Idempotency-Key",
        )
    return Submitted(job=job, replayed=True)


def job_cancel(*, job: IngestJob) -> bool:
    """Cancel a queued or running job: its unwritten documents are never written (the slice a worker
    is writing finishes; documents already written stay). False when it had finished already."""
    cancelled = IngestJob.objects.filter(pk=job.pk, state__in=UNFINISHED).update(
        state=IngestJob.State.CANCELLED, finished_at=Now()
    )
    if cancelled:
        items_cancel_pending(job_id=job.pk)
    return bool(cancelled)


def items_cancel_pending(*, job_id: int) -> int:
    """Mark a job's pending items cancelled, except those a worker holds (it settles them)."""
    with transaction.atomic():
        ids = list(
            IngestJobItem.objects.filter(job_id=job_id, state=IngestJobItem.State.PENDING)
            .select_for_update(skip_locked=True)
            .values_list("pk", flat=True)
        )
        return IngestJobItem.objects.filter(pk__in=ids).update(
            state=IngestJobItem.State.CANCELLED, payload=None
        )


def jobs_resume() -> list[int]:
    """Wake a worker for every unfinished job nobody has touched lately (its message was lost with
    Redis, or its worker died). Waking a job that is still running is harmless: the items being
    written are locked, so the second worker writes others or leaves."""
    stale = timezone.now() - timedelta(seconds=settings.KNOWLEDGE_JOB_STALE_SECONDS)
    ids = list(
        IngestJob.objects.filter(state__in=UNFINISHED)
        .annotate(touched=Coalesce("heartbeat_at", "created_at"))
        .filter(touched__lt=stale)
        .values_list("pk", flat=True)
    )
    for job_id in ids:
        send_task(RUN_INGEST_JOB, job_id, expires=settings.KNOWLEDGE_JOB_STALE_SECONDS)
    return ids


def jobs_purge() -> int:
    """Delete finished jobs past the retention (their documents stay)."""
    cutoff = timezone.now() - timedelta(days=settings.KNOWLEDGE_JOB_RETENTION_DAYS)
    deleted, _ = IngestJob.objects.filter(~Q(state__in=UNFINISHED), finished_at__lt=cutoff).delete()
    return deleted
