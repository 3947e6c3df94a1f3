"""What a pull connector's earlier syncs stored, read back for its kind (`SourceState`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knowledge.models import Connector, Document


class StoredSourceState:
    """The stored metadata of a connector's live documents, one indexed look-up per id."""

    def __init__(self, connector: Connector) -> None:
        self.connector_id = connector.pk

    def metadata(self, external_id: str) -> Mapping[str, Any] | None:
        found = (
            Document.objects.filter(
                connector_id=self.connector_id, external_id=external_id, deleted_at__isnull=True
            )
            .values_list("metadata", flat=True)
            .first()
        )
        return found if isinstance(found, dict) else None


def stored_source_state(*, connector: Connector) -> StoredSourceState:
    """The `state` argument of `ConnectorKind.list_source` for this connector."""
    return StoredSourceState(connector)
