"""What a pull connector's earlier syncs stored, read back for its kind (`SourceState`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Q

from knowledge.models import Connector, Document, Principal


def tracked() -> Q:
    """The documents a sync still follows at the source: live ones, and those an admin deleted (their
    source ACL stays current, so restoring one never brings back an ACL the source has narrowed)."""
    return Q(deleted_at__isnull=True) | Q(deletion_origin=Document.DeletionOrigin.ADMIN)


class StoredSourceState:
    """The stored metadata of the documents a connector's syncs follow (live, or deleted by an admin),
    read in one statement when first needed."""

    def __init__(self, connector: Connector, *, full: bool = False) -> None:
        self.connector_id = connector.pk
        self.tenant_id = connector.tenant_id
        self.full = full
        self._metadata: dict[str, Mapping[str, Any]] | None = None

    def _all(self) -> dict[str, Mapping[str, Any]]:
        if self._metadata is None:
            rows = Document.objects.filter(tracked(), connector_id=self.connector_id).values_list(
                "external_id", "metadata"
            )
            self._metadata = {eid: meta if isinstance(meta, dict) else {} for eid, meta in rows}
        return self._metadata

    def metadata(self, external_id: str) -> Mapping[str, Any] | None:
        return self._all().get(external_id)

    def external_ids(self) -> set[str]:
        return set(self._all())

    def cursor(self) -> str:
        if self.full:
            return ""
        stored = Connector.objects.filter(pk=self.connector_id).values_list("source_cursor", flat=True)
        return stored.first() or ""  # read now: the caller's instance may predate the last sync

    def groups(self, prefix: str) -> set[str]:
        found = Principal.objects.filter(
            tenant_id=self.tenant_id, kind=Principal.Kind.GROUP, external_id__startswith=prefix
        ).values_list("external_id", flat=True)
        return set(found)


def stored_source_state(*, connector: Connector, full: bool = False) -> StoredSourceState:
    """The `state` argument of `ConnectorKind.list_source` for this connector (a `full` sync gets no
    change-feed cursor, so the source is listed in full)."""
    return StoredSourceState(connector, full=full)
