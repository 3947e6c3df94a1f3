"""Syncs a pull connector: write what the source has, delete what it no longer lists.

A sync is claimed with a compare-and-set on the connector's status, so two workers never sync the
same connector at once; a claim older than the task time limit is considered abandoned. A bad item
(an unreadable file, a failed fetch) is an error on that item and is kept as it is; the rest syncs.
Documents the source no longer lists are deleted (chunks, vectors and, through their tombstones, the
index) only after a complete listing, and a listing with nothing at all in it (an unmounted folder)
deletes nothing. A full resync also marks every document dirty, so the index gets all of it again.
Each run is recorded as a `SyncRun` with its counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from knowledge.connectors.registry import connector_kind
from knowledge.connectors.types import Listing, SourceAcl, SourceError
from knowledge.credentials import CredentialUnreadable
from knowledge.models import Connector, Document, SyncRun
from knowledge.selectors.connector_state import stored_source_state
from knowledge.services.deletion import documents_delete
from knowledge.services.enqueue import SYNC_DOCUMENTS, send_task
from knowledge.services.index_sync.reconcile import documents_mark_dirty
from knowledge.services.source_acls import documents_source_acl_set
from knowledge.services.source_groups import source_groups_apply
from knowledge.services.source_permissions import kept_acls_apply, listing_fail_closed
from knowledge.services.writes import WriteStats, documents_write
from retrieval_backends.base import is_external
from retrieval_backends.registry import get_backend


@dataclass(frozen=True)
class SyncOutcome:
    claimed: bool
    stats: WriteStats | None = None
    deleted: int = 0
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default=())


def _claim(connector: Connector) -> bool:
    claimable = ~Q(last_sync_status=Connector.SyncStatus.RUNNING) | abandoned()
    return (
        Connector.objects.filter(claimable, pk=connector.pk, enabled=True).update(
            last_sync_status=Connector.SyncStatus.RUNNING, last_synced_at=timezone.now()
        )
        == 1
    )


def abandoned() -> Q:
    """A running claim (a sync's or a permission sync's) older than the task time limit."""
    stale = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    content = Q(last_synced_at__isnull=True) | Q(last_synced_at__lt=stale)
    return content & (Q(permissions_synced_at__isnull=True) | Q(permissions_synced_at__lt=stale))


def connector_sync(*, connector: Connector, full: bool = False) -> SyncOutcome:
    """Pull the connector's source into the knowledge base; idempotent. `full` re-pushes everything."""
    if not connector.pulls or not _claim(connector):
        return SyncOutcome(claimed=False)
    run = SyncRun.objects.create(connector=connector, kind=SyncRun.Kind.FULL if full else SyncRun.Kind.SYNC)
    errors: list[SourceError] = []
    try:
        listing = _list(connector, full=full)
        source_permissions_first(connector=connector, listing=listing)
        stats = documents_write(connector=connector, documents=listing.documents, on_progress=_progress(run))
        written = {d.external_id for d in listing.documents}
        kept = {k: acl for k, acl in listing.acls.items() if k not in written and k not in listing.private}
        kept_acls_apply(connector=connector, acls=kept)
        make_private(connector, listing)
        errors = [*listing.errors, *stats.errors]
        deleted, warnings = _prune(connector, listing)
        _advance_cursor(connector, listing)
        if full:
            _repush(connector)
    except Exception as exc:
        _finish(connector, run, [*(e.message for e in errors), f"{type(exc).__name__}: {exc}"])
        raise
    messages = [e.message for e in errors]
    _finish(connector, run, messages, stats=stats, deleted=deleted)
    return SyncOutcome(claimed=True, stats=stats, deleted=deleted, errors=tuple(messages), warnings=warnings)


def _list(connector: Connector, *, full: bool) -> Listing:
    kind = connector_kind(connector.kind)
    state = stored_source_state(connector=connector, full=full)  # what the last sync saw (validators)
    try:
        credential = connector.credential() if kind.credential_label else ""
    except CredentialUnreadable as exc:
        listing = Listing()
        listing.fail_listing(str(exc))
        return listing
    return kind.list_source(connector.config, state=state, credential=credential)


def source_permissions_first(*, connector: Connector, listing: Listing) -> None:
    """Before any document is written: the source's groups get their members (a removed member loses
    access first), and whatever names a group that could not be read in full becomes private."""
    source_groups_apply(tenant_id=connector.tenant_id, groups=listing.groups)
    listing_fail_closed(connector=connector, listing=listing)


REPUSH_BATCH = 100


def _repush(connector: Connector) -> None:
    """Mark every document dirty, and queue pushes in batches so several workers share the work
    (the reconciler covers whatever a lost task leaves)."""
    documents_mark_dirty(connector_id=connector.pk)
    if not is_external(get_backend()):
        return
    ids = list(connector.documents.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(ids), REPUSH_BATCH):
        send_task(SYNC_DOCUMENTS, ids[start : start + REPUSH_BATCH])


def _progress(run: SyncRun) -> Callable[[int, int], None]:
    seen = [0]

    def report(documents: int, chunks: int) -> None:
        if documents:
            seen[0] += documents
            SyncRun.objects.filter(pk=run.pk).update(processed=seen[0])

    return report


def make_private(connector: Connector, listing: Listing) -> None:
    """Documents whose ACL file is unusable but that were not written now (kept as they were) must not
    keep an older, wider ACL: their source ACL becomes private (fail closed)."""
    written = {d.external_id for d in listing.documents}
    stale = listing.private - written
    if stale:
        ids = list(connector.documents.filter(external_id__in=stale).values_list("pk", flat=True))
        documents_source_acl_set(
            tenant_id=connector.tenant_id, document_ids=ids, acl=SourceAcl(), origin=Document.AclOrigin.SOURCE
        )


def _prune(connector: Connector, listing: Listing) -> tuple[int, tuple[str, ...]]:
    """Delete the documents the source no longer has, when the listing can be trusted."""
    if not listing.complete:
        return 0, ("the listing was incomplete, so no document was removed",)
    seen = listing.seen
    gone = connector.documents.exclude(external_id__in=seen)
    if not seen and gone.exists():
        return 0, ("the source listed nothing (unmounted?), so no document was removed",)
    return documents_delete(document_ids=list(gone.values_list("pk", flat=True))), ()


def _advance_cursor(connector: Connector, listing: Listing) -> None:
    """A complete listing's change-feed position becomes the next sync's starting point; after an
    incomplete one the old position stays, so the changes it may have missed are read again."""
    if listing.complete and listing.cursor is not None:
        Connector.objects.filter(pk=connector.pk).update(source_cursor=listing.cursor[:500])


def _finish(
    connector: Connector,
    run: SyncRun,
    errors: list[str],
    *,
    stats: WriteStats | None = None,
    deleted: int = 0,
) -> None:
    now, text = timezone.now(), "\n".join(errors)[:10000]
    SyncRun.objects.filter(pk=run.pk).update(
        status=SyncRun.Status.FAILED if errors else SyncRun.Status.OK,
        finished_at=now,
        added=stats.created if stats else 0,
        updated=stats.updated if stats else 0,
        unchanged=stats.unchanged if stats else 0,
        deleted=deleted,
        errors=len(errors),
        error_text=text,
    )
    Connector.objects.filter(pk=connector.pk).update(
        last_sync_status=Connector.SyncStatus.FAILED if errors else Connector.SyncStatus.OK,
        last_synced_at=now,
        last_sync_error_count=len(errors),
        last_sync_error=text,
    )


def connectors_due() -> list[int]:
    """Enabled pull connectors whose sync interval has passed (or that never synced)."""
    now = timezone.now()
    due = []
    for connector in Connector.objects.filter(enabled=True).exclude(kind=Connector.Kind.API):
        last = connector.last_synced_at
        if last is None or now - last >= connector.sync_interval:  # no date overflow on any interval
            due.append(connector.pk)
    return due
