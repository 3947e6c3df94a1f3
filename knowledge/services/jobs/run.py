"""Running an ingest job: claim a slice of pending items, write them and mark them, in one transaction.

A worker killed mid-slice rolls the whole slice back (documents and marks), so a rerun writes it once;
`SKIP LOCKED` lets several workers share one job. Each document is written with its own ACL in the
same transaction as its chunks, so it is searchable, and only by whom it names, the moment it lands.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Func, OuterRef, Subquery
from django.db.models.functions import Coalesce, Now

from knowledge.models import Chunk, Connector, IngestJob, IngestJobItem
from knowledge.pipeline.embedders.base import EmbedderError
from knowledge.services.api_indexing import api_source
from knowledge.services.jobs.submit import items_cancel_pending
from knowledge.services.writes import documents_write

logger = logging.getLogger(__name__)
Item = IngestJobItem
# Guided slices: a worker takes at most this share of what is pending, so the last documents of a job
# are shared out in ever smaller slices and the workers sharing it finish together (with full slices to
# the end, one worker could still be embedding 16 documents while the other had nothing left).
GUIDED_SHARE = 4


@dataclass(frozen=True)
class RunOutcome:
    """The job's state after a run (None: no such job); `out_of_time`: pending items are left."""

    state: str | None
    out_of_time: bool = False


def job_run(*, job_id: int, seconds: float | None = None) -> RunOutcome:
    """Write a job's pending documents, for at most about `seconds` (then `out_of_time`).

    Safe to call any number of times, concurrently: each call writes what nobody else holds.
    :raises EmbedderError: (transient) the embedder is down; the slice rolled back, retry later.
    """
    deadline = time.monotonic() + seconds if seconds is not None else None
    started = IngestJob.objects.filter(pk=job_id, state__in=[IngestJob.State.QUEUED, IngestJob.State.RUNNING])
    started.update(
        state=IngestJob.State.RUNNING, started_at=Coalesce("started_at", Now()), heartbeat_at=Now()
    )
    while _run_slice(job_id):
        IngestJob.objects.filter(pk=job_id, state=IngestJob.State.RUNNING).update(heartbeat_at=Now())
        if deadline is not None and time.monotonic() > deadline and _pending(job_id):
            return RunOutcome(IngestJob.State.RUNNING, out_of_time=True)
    return RunOutcome(_settle(job_id))


def _pending(job_id: int) -> bool:
    return Item.objects.filter(job_id=job_id, state=Item.State.PENDING).exists()


def _run_slice(job_id: int) -> bool:
    """Write one slice; False when the job is over for this worker (finished, cancelled, or every
    remaining item is held by another worker)."""
    with transaction.atomic():
        job = IngestJob.objects.select_related("connector").filter(pk=job_id).first()
        if job is None or job.state != IngestJob.State.RUNNING:
            return False
        items = _claim(job_id)
        if not items:
            return False
        _write(job.connector, items)
        return True


def _claim(job_id: int) -> list[IngestJobItem]:
    """Lock the next pending items, up to a slice's document count and characters and a guided share
    of the pending ones (at least one)."""
    pending = Item.objects.filter(job_id=job_id, state=Item.State.PENDING)
    size = min(settings.KNOWLEDGE_JOB_SLICE_DOCUMENTS, -(-pending.count() // GUIDED_SHARE))
    locked = list(
        pending.order_by("position").select_for_update(skip_locked=True).only("pk", "chars")[: max(1, size)]
    )
    chosen: list[int] = []
    chars = 0
    for item in locked:
        if chosen and chars + item.chars > settings.KNOWLEDGE_JOB_SLICE_CHARS:
            break
        chosen.append(item.pk)
        chars += item.chars
    return list(Item.objects.filter(pk__in=chosen).order_by("position"))


def _write(connector: Connector, items: Sequence[IngestJobItem]) -> None:
    sources = [api_source(item.payload or {}) for item in items]
    try:
        stats = documents_write(connector=connector, documents=sources, batch_size=len(sources))
        errors = {e.external_id: e.message for e in stats.errors if e.external_id is not None}
    except EmbedderError as exc:
        if not exc.permanent:
            raise
        errors = {item.external_id: f"{item.external_id}: {exc}" for item in items}
        stats = None
    failed = {
        i.pk: errors.get(i.external_id, "not written")
        for i in items
        if stats is None or i.external_id in errors
    }
    done = [i.pk for i in items if i.pk not in failed]
    # One statement for the written items (each counts its document's chunks), one per failed item.
    chunks = (
        Chunk.objects.filter(document__connector=connector, document__external_id=OuterRef("external_id"))
        .order_by()
        .annotate(n=Func(F("pk"), function="COUNT"))
        .values("n")
    )
    Item.objects.filter(pk__in=done).update(
        state=Item.State.DONE, payload=None, error="", chunks=Coalesce(Subquery(chunks), 0)
    )
    for pk, error in failed.items():
        Item.objects.filter(pk=pk).update(state=Item.State.FAILED, payload=None, error=error)


def _settle(job_id: int) -> str | None:
    """Finish the job once no item is pending; a cancelled job's leftovers become cancelled."""
    job = IngestJob.objects.filter(pk=job_id).first()
    if job is None:
        return None
    if job.state == IngestJob.State.CANCELLED:
        items_cancel_pending(job_id=job_id)
        return job.state
    if (
        job.state != IngestJob.State.RUNNING
        or Item.objects.filter(job_id=job_id, state=Item.State.PENDING).exists()
    ):
        return job.state
    states = dict(
        Item.objects.filter(job_id=job_id).values("state").annotate(n=Count("pk")).values_list("state", "n")
    )
    final = _final_state(done=states.get(Item.State.DONE, 0), failed=states.get(Item.State.FAILED, 0))
    IngestJob.objects.filter(pk=job_id, state=IngestJob.State.RUNNING).update(state=final, finished_at=Now())
    logger.info("ingest job %s %s: %s", job_id, final, states)
    return final


def _final_state(*, done: int, failed: int) -> str:
    if not failed:
        return IngestJob.State.SUCCEEDED
    return IngestJob.State.PARTIAL if done else IngestJob.State.FAILED
