"""A permission-only sync: re-read who may see each document, and the groups' members, without
fetching content (the "access control sync" of the source kinds that can), more often than a sync.

It claims the connector like a sync does (never both at once, so an older reading never overwrites
a newer one), but leaves `last_synced_at` alone, so content syncs keep their own schedule. Runs are
recorded as `SyncRun`s of kind `acl`.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q
from django.utils import timezone

from knowledge.connectors.registry import connector_kind, kind_names
from knowledge.connectors.types import Listing
from knowledge.credentials import CredentialUnreadable
from knowledge.models import Connector, SyncRun
from knowledge.selectors.connector_state import stored_source_state
from knowledge.services.connector_sync import abandoned, make_private, source_permissions_first
from knowledge.services.source_permissions import kept_acls_apply


@dataclass(frozen=True)
class PermissionOutcome:
    claimed: bool
    changed: int = 0
    errors: tuple[str, ...] = ()


def _claim(connector: Connector) -> str | None:
    """The connector's status before the claim, or None when it is not claimable now."""
    previous = Connector.objects.filter(pk=connector.pk).values_list("last_sync_status", flat=True).first()
    if previous is None:
        return None
    claimable = ~Q(last_sync_status=Connector.SyncStatus.RUNNING) | abandoned()
    claimed = Connector.objects.filter(
        claimable, pk=connector.pk, enabled=True, last_sync_status=previous
    ).update(last_sync_status=Connector.SyncStatus.RUNNING, permissions_synced_at=timezone.now())
    if not claimed:
        return None
    return Connector.SyncStatus.OK if previous == Connector.SyncStatus.RUNNING else previous


def connector_permissions_sync(*, connector: Connector) -> PermissionOutcome:
    """Apply the source's current permissions and groups to the connector's documents; idempotent."""
    if connector.kind not in kind_names() or not connector_kind(connector.kind).syncs_permissions:
        return PermissionOutcome(claimed=False)
    previous = _claim(connector)
    if previous is None:
        return PermissionOutcome(claimed=False)
    run = SyncRun.objects.create(connector=connector, kind=SyncRun.Kind.ACL)
    changed, errors = 0, []
    try:
        listing = _list(connector)
        source_permissions_first(connector=connector, listing=listing)
        changed = kept_acls_apply(
            connector=connector, acls={k: a for k, a in listing.acls.items() if k not in listing.private}
        )
        make_private(connector, listing)
        errors = [e.message for e in listing.errors]
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
        _finish(connector, run, previous, changed, errors)
        raise
    _finish(connector, run, previous, changed, errors)
    return PermissionOutcome(claimed=True, changed=changed, errors=tuple(errors))


def _list(connector: Connector) -> Listing:
    kind = connector_kind(connector.kind)
    try:
        credential = connector.credential()
    except CredentialUnreadable as exc:
        listing = Listing()
        listing.fail_listing(str(exc))
        return listing
    return kind.list_permissions(
        connector.config, stored_source_state(connector=connector), credential=credential
    )


def _finish(connector: Connector, run: SyncRun, previous: str, changed: int, errors: list[str]) -> None:
    now, text = timezone.now(), "\n".join(errors)[:10000]
    SyncRun.objects.filter(pk=run.pk).update(
        status=SyncRun.Status.FAILED if errors else SyncRun.Status.OK,
        finished_at=now,
        updated=changed,
        errors=len(errors),
        error_text=text,
    )
    update: dict[str, object] = {"last_sync_status": previous, "permissions_synced_at": now}
    if errors:
        update.update(
            last_sync_status=Connector.SyncStatus.FAILED,
            last_sync_error_count=len(errors),
            last_sync_error=text,
        )
    Connector.objects.filter(pk=connector.pk).update(**update)


def connectors_permissions_due() -> list[int]:
    """Enabled connectors of kinds with a permission sync, synced at least once, whose permission
    interval has passed since their last sync or permission sync."""
    kinds = [name for name in kind_names() if connector_kind(name).syncs_permissions]
    now, due = timezone.now(), []
    for connector in Connector.objects.filter(enabled=True, kind__in=kinds, last_synced_at__isnull=False):
        last = max(t for t in (connector.last_synced_at, connector.permissions_synced_at) if t is not None)
        if now - last >= connector.permission_sync_interval:
            due.append(connector.pk)
    return due
