"""Deletions: documents, every document of a connector, a connector, a tenant, a principal.

Nothing is deleted by a silent ORM cascade: documents go in batches of short transactions that
lock the rows, remove their chunks and vectors through the retrieval backend, and delete the rows
(a trigger leaves a tombstone for each, so an external index is told even if no task runs). A large
purge therefore neither holds one huge transaction nor loses its place when interrupted: running it
again continues with what is left.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from knowledge.models import Connector, Document, Principal, SyncRun, Tenant
from knowledge.services.access import documents_access_sync
from knowledge.services.enqueue import schedule_index_sync
from knowledge.store.chunks import delete_documents_chunks

Progress = Callable[[int], None]
BATCH = 200


def _delete_batch(document_ids: Sequence[int]) -> int:
    with transaction.atomic():
        locked = list(
            Document.objects.select_for_update()
            .filter(pk__in=document_ids)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        if locked:
            delete_documents_chunks(locked)
            Document.objects.filter(pk__in=locked).delete()
            schedule_index_sync(locked)
    return len(locked)


def documents_delete(
    *, document_ids: Sequence[int], batch_size: int = BATCH, on_progress: Progress | None = None
) -> int:
    """Hard-delete documents (chunks and vectors too) in short batches; returns how many existed."""
    ids, deleted = sorted(set(document_ids)), 0
    for start in range(0, len(ids), batch_size):
        count = _delete_batch(ids[start : start + batch_size])
        deleted += count
        if on_progress:
            on_progress(count)
    return deleted


def connector_purge(*, connector: Connector, on_progress: Progress | None = None) -> int:
    """Delete every document of the connector (resumable: re-running continues); returns the count."""
    total = 0
    while ids := list(
        Document.objects.filter(connector=connector).order_by("pk").values_list("pk", flat=True)[:BATCH]
    ):
        count = documents_delete(document_ids=ids)
        total += count
        if on_progress:
            on_progress(count)
    return total


def connector_purge_run(*, connector_id: int, run_id: int | None = None) -> int:
    """`connector_purge` recorded as a sync run with progress (the purge task's body)."""
    connector = Connector.objects.filter(pk=connector_id).first()
    if connector is None:
        return 0
    run = SyncRun.objects.filter(pk=run_id).first() if run_id else None
    if run is None:
        run = SyncRun.objects.create(connector=connector, kind=SyncRun.Kind.PURGE)
    remaining = Document.objects.filter(connector=connector).count()
    SyncRun.objects.filter(pk=run.pk).update(total=run.deleted + remaining, status=SyncRun.Status.RUNNING)

    def progress(count: int) -> None:
        SyncRun.objects.filter(pk=run.pk).update(processed=run.processed + count, deleted=run.deleted + count)
        run.refresh_from_db(fields=["processed", "deleted"])

    deleted = connector_purge(connector=connector, on_progress=progress)
    SyncRun.objects.filter(pk=run.pk).update(status=SyncRun.Status.OK, finished_at=timezone.now())
    return deleted


def connector_delete(*, connector: Connector, on_progress: Progress | None = None) -> int:
    """Purge the connector's documents, then delete the connector; returns the documents deleted."""
    count = connector_purge(connector=connector, on_progress=on_progress)
    with transaction.atomic():
        locked = Connector.objects.select_for_update().filter(pk=connector.pk).first()
        if locked is not None:
            count += connector_purge(connector=locked)  # written meanwhile
            locked.delete()
    return count


def tenant_delete(*, tenant: Tenant, on_progress: Progress | None = None) -> int:
    """Delete every connector (with its documents) of the tenant, then the tenant itself."""
    count = 0
    for connector in Connector.objects.filter(tenant=tenant).order_by("pk"):
        count += connector_delete(connector=connector, on_progress=on_progress)
    Tenant.objects.filter(pk=tenant.pk).delete()
    return count


def principal_delete(*, principal: Principal) -> int:
    """Delete a principal; the documents that granted it lose its token at once. Returns how many."""
    granted = Q(allowed_principals=principal) | Q(source_principals=principal)
    with transaction.atomic():
        ids = sorted(set(Document.objects.filter(granted).values_list("pk", flat=True)))
        list(Document.objects.select_for_update().filter(pk__in=ids).order_by("pk").values_list("pk"))
        Principal.objects.filter(pk=principal.pk).delete()
        documents_access_sync(document_ids=ids)
    return len(ids)
