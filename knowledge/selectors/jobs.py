"""Ingest job reads: a job of the caller's tenant, and its progress from its items."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, Sum
from django.utils import timezone

from knowledge.errors import NotFound
from knowledge.models import IngestJob, IngestJobItem, Tenant

ERRORS_SHOWN = 100


@dataclass(frozen=True)
class JobProgress:
    """Documents by state, chunks written (and an estimate of the total), the first errors."""

    job: IngestJob
    documents: dict[str, int]
    chunks_written: int
    chunks_estimated_total: int | None
    errors: list[dict[str, Any]]
    seconds: float | None


def job_get(*, tenant: Tenant, job_id: int) -> IngestJob:
    """The tenant's job; another tenant's job is as absent as a missing one."""
    job = IngestJob.objects.filter(pk=job_id, tenant=tenant).first()
    if job is None:
        raise NotFound(f"no job {job_id} in this tenant", field="job_id")
    return job


def jobs_tally(*, job_ids: list[int]) -> tuple[int, int, bool]:
    """For polling several jobs at once: documents settled (written, failed or cancelled), chunks
    written, and whether every job has finished; two queries, whatever the number of jobs."""
    items = IngestJobItem.objects.filter(job_id__in=job_ids)
    totals = items.aggregate(
        settled=Count("pk", filter=~Q(state=IngestJobItem.State.PENDING)), chunks=Sum("chunks")
    )
    unfinished = IngestJob.objects.filter(pk__in=job_ids).exclude(state__in=IngestJob.FINISHED).exists()
    return totals["settled"] or 0, totals["chunks"] or 0, not unfinished


def job_progress(*, job: IngestJob) -> JobProgress:
    rows = (
        IngestJobItem.objects.filter(job=job)
        .values("state")
        .annotate(n=Count("pk"), chunks=Sum("chunks"), chars=Sum("chars"))
    )
    by_state: dict[str, dict[str, Any]] = {row["state"]: dict(row) for row in rows}
    nothing: dict[str, Any] = {}
    counts = {state: by_state.get(state, nothing).get("n", 0) for state in IngestJobItem.State.values}
    done = by_state.get(IngestJobItem.State.DONE, nothing)
    written, done_chars = done.get("chunks") or 0, done.get("chars") or 0
    pending_chars = by_state.get(IngestJobItem.State.PENDING, nothing).get("chars") or 0
    estimate = written + round(pending_chars * written / done_chars) if done_chars else None
    return JobProgress(
        job=job,
        documents={"total": job.total_documents, **counts},
        chunks_written=written,
        chunks_estimated_total=estimate,
        errors=_errors(job),
        seconds=job_seconds(job),
    )


def _errors(job: IngestJob) -> list[dict[str, Any]]:
    failed = IngestJobItem.objects.filter(job=job, state=IngestJobItem.State.FAILED).order_by("position")
    return [
        {"position": position, "id": external_id, "message": error}
        for position, external_id, error in failed.values_list("position", "external_id", "error")[
            :ERRORS_SHOWN
        ]
    ]


def job_seconds(job: IngestJob) -> float | None:
    """Seconds since the job started, until it finished."""
    if job.started_at is None:
        return None
    return round(((job.finished_at or timezone.now()) - job.started_at).total_seconds(), 3)
