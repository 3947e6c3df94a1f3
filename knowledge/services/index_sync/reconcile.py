"""The reconciler: pushes every dirty document and tombstone, oldest first, in bounded batches.

One run at a time across all processes (a PostgreSQL advisory lock, released with the session if a
worker dies). Celery beat runs it every few seconds; `manage.py index_sync` runs it in the foreground.
A lost or failed task therefore never loses work: the change is recorded in PostgreSQL, and this
loop finds it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, Min, Q
from django.utils import timezone

from knowledge.models import Document, IndexTombstone
from knowledge.services.index_sync.locks import IndexRebuilding
from knowledge.services.index_sync.push import documents_push, tombstones_push
from knowledge.store.advisory import try_lock, unlock

LOCK_KEY = 0x6B62_1D5C  # "kb" index reconciler


@dataclass
class ReconcileStats:
    ran: bool = True
    pushed: int = 0
    deleted: int = 0
    failed: int = 0
    batches: int = 0
    seconds: float = 0.0

    @property
    def per_second(self) -> float:
        return (self.pushed + self.deleted) / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class IndexStatus:
    dirty: int
    tombstones: int
    failing: int
    oldest_pending: datetime | None

    @property
    def pending(self) -> bool:
        return bool(self.dirty or self.tombstones)

    @property
    def oldest_age_seconds(self) -> float | None:
        return None if self.oldest_pending is None else (timezone.now() - self.oldest_pending).total_seconds()


DIRTY = Q(index_version__gt=F("synced_version"))


@contextmanager
def reconciler_lock() -> Iterator[bool]:
    """Whether this process holds the reconciler lock (never waits for it)."""
    held = try_lock(LOCK_KEY)
    try:
        yield held
    finally:
        if held:
            unlock(LOCK_KEY)


def due_documents(limit: int) -> list[int]:
    """Dirty documents not in a retry back-off, oldest change first."""
    due = Q(sync_retry_at__isnull=True) | Q(sync_retry_at__lte=timezone.now())
    query = Document.objects.filter(DIRTY, due).order_by("index_changed_at", "pk")
    return list(query.values_list("pk", flat=True)[:limit])


def due_tombstones(limit: int) -> list[int]:
    due = Q(retry_at__isnull=True) | Q(retry_at__lte=timezone.now())
    query = IndexTombstone.objects.filter(due).order_by("created_at", "document_id")
    return list(query.values_list("document_id", flat=True)[:limit])


def index_reconcile(
    *,
    batch_size: int = 200,
    time_budget: float | None = 20.0,
    on_progress: Callable[[int], None] | None = None,
) -> ReconcileStats:
    """Push dirty documents and tombstones until none are due or the time budget is spent."""
    stats, started = ReconcileStats(), time.monotonic()
    with reconciler_lock() as held:
        if not held:
            return ReconcileStats(ran=False)
        while time_budget is None or time.monotonic() - started < time_budget:
            documents, tombstones = due_documents(batch_size), due_tombstones(batch_size)
            if not documents and not tombstones:
                break
            try:
                _batch(stats, documents, tombstones, on_progress)
            except IndexRebuilding:
                stats.ran = False  # the rebuild's owner pushes; the next run catches up
                break
    stats.seconds = time.monotonic() - started
    return stats


def _batch(
    stats: ReconcileStats,
    documents: list[int],
    tombstones: list[int],
    on_progress: Callable[[int], None] | None,
) -> None:
    pushed = documents_push(document_ids=documents) if documents else None
    deleted = tombstones_push(document_ids=tombstones) if tombstones else None
    for outcome in (pushed, deleted):
        if outcome is not None:
            stats.pushed += outcome.pushed
            stats.deleted += outcome.deleted
            stats.failed += len(outcome.failed)
    stats.batches += 1
    if on_progress:
        on_progress(len(documents) + len(tombstones))


def index_status() -> IndexStatus:
    """How far the index is behind PostgreSQL."""
    dirty = Document.objects.filter(DIRTY)
    oldest_document = dirty.aggregate(oldest=Min("index_changed_at"))["oldest"]
    oldest_tombstone = IndexTombstone.objects.aggregate(oldest=Min("created_at"))["oldest"]
    oldest = min((t for t in (oldest_document, oldest_tombstone) if t is not None), default=None)
    return IndexStatus(
        dirty=dirty.count(),
        tombstones=IndexTombstone.objects.count(),
        failing=dirty.exclude(sync_error="").count(),
        oldest_pending=oldest,
    )


def documents_mark_dirty(*, document_ids: list[int] | None = None, connector_id: int | None = None) -> int:
    """Make documents dirty so the reconciler re-pushes them (a full resync, `index_sync --all`)."""
    query = Document.objects.all()
    if document_ids is not None:
        query = query.filter(pk__in=document_ids)
    if connector_id is not None:
        query = query.filter(connector_id=connector_id)
    return query.update(
        index_version=F("index_version") + 1, index_changed_at=timezone.now(), sync_retry_at=None
    )
