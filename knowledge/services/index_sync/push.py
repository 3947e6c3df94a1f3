"""Pushes of absolute document state and deletions, marked clean by compare-and-set on the version read.

A push re-reads everything from PostgreSQL, so pushing twice is harmless and a crash anywhere only
repeats work: a document stays dirty until a push of its newest version succeeded, and a tombstone
stays until the index confirmed the deletion. A document whose push fails gets its error recorded
(committed) and a growing retry delay, so one bad document never blocks or loops the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from django.db.models import F
from django.utils import timezone

from knowledge.models import IndexTombstone
from knowledge.services.index_sync.locks import index_push
from knowledge.services.index_sync.snapshot import read_snapshot
from knowledge.store import sync_marks
from knowledge.store.sync_marks import mark_clean
from retrieval_backends.base import ExternalIndex
from retrieval_backends.registry import get_backend

MAX_RETRY_SECONDS = 3600
MAX_VERSION = 2**62  # above any index_version (a bigint), below OpenSearch's external version limit
MAX_ERROR_CHARS = 2000


@dataclass
class PushOutcome:
    pushed: int = 0
    deleted: int = 0
    failed: dict[int, str] = field(default_factory=dict)


def mark_failed(failures: dict[int, str]) -> None:
    sync_marks.mark_failed(failures, max_retry_seconds=MAX_RETRY_SECONDS, max_error_chars=MAX_ERROR_CHARS)


def documents_push(*, document_ids: Sequence[int], force: bool = False) -> PushOutcome:
    """Push the documents' absolute state (and the deletion of those gone) to the backend.

    Documents already pushed at their current version are skipped (a late or repeated task costs
    nothing), unless `force`.
    """
    backend = get_backend()
    external = backend if isinstance(backend, ExternalIndex) else None
    snapshot = read_snapshot(document_ids=document_ids, with_chunks=external is not None)
    outcome = PushOutcome()
    states = [s for s in snapshot.states if force or s.document_id not in snapshot.clean]
    if external is not None and states:
        with index_push():
            outcome.failed = dict(external.sync_document_access(states))
    pushed = {s.document_id for s in states} - set(outcome.failed)
    mark_clean({pk: snapshot.versions[pk] for pk in pushed})
    mark_failed(outcome.failed)
    outcome.pushed = len(pushed)
    gone = sorted(set(document_ids) - set(snapshot.versions))
    if gone:
        outcome.deleted = tombstones_push(document_ids=gone).deleted
    return outcome


def tombstones_push(*, document_ids: Sequence[int]) -> PushOutcome:
    """Delete these documents from the index, then their tombstones (failed ones keep theirs)."""
    backend = get_backend()
    ids = sorted(set(document_ids))
    failed: dict[int, str] = {}
    if isinstance(backend, ExternalIndex) and ids:
        versions = dict(
            IndexTombstone.objects.filter(document_id__in=ids).values_list("document_id", "version")
        )
        with index_push():
            # A document gone without a tombstone (never indexed, or already confirmed) is deleted at
            # the highest version, which no push can beat.
            failed = dict(backend.sync_document_deletions({i: versions.get(i, MAX_VERSION) for i in ids}))
    done = [i for i in ids if i not in failed]
    IndexTombstone.objects.filter(document_id__in=done).delete()
    for document_id, error in failed.items():
        tombstone = IndexTombstone.objects.filter(document_id=document_id).first()
        if tombstone is not None:
            delay = min(MAX_RETRY_SECONDS, 2 ** min(tombstone.attempts + 1, 20))
            IndexTombstone.objects.filter(pk=tombstone.pk).update(
                last_error=error[:MAX_ERROR_CHARS],
                attempts=F("attempts") + 1,
                retry_at=timezone.now() + timedelta(seconds=delay),
            )
    return PushOutcome(deleted=len(done), failed=failed)


def documents_index_sync(*, document_ids: Sequence[int]) -> dict[str, int]:
    """The task's entry point: push these documents; counts of what happened."""
    outcome = documents_push(document_ids=document_ids)
    return {"synced": outcome.pushed, "deleted": outcome.deleted, "failed": len(outcome.failed)}
