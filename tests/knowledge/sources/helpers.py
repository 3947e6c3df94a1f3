"""What the source-connector tests share: a connector with a sealed credential, searches as a user."""

from __future__ import annotations

from typing import Any

from knowledge.models import ApiKey, Connector, Document
from knowledge.search import search_chunks
from knowledge.selectors.scopes import search_scope_for_key
from tests.factories import ConnectorFactory


def source_connector(kind: str, config: dict[str, Any], credential: str) -> Connector:
    connector = ConnectorFactory.create(kind=kind, config=config)
    connector.set_credential(credential)
    connector.save()
    return connector


def visible(connector: Connector, user: str | None, query: str = "handbook") -> set[str]:
    """External ids of the connector's documents a search as `user` returns (keyword and vector lanes)."""
    key = ApiKey(tenant=connector.tenant, on_behalf_of=True)
    scope = search_scope_for_key(key=key, on_behalf_of=user)
    found: set[int] = set()
    for lane in ("keyword", "vector"):
        found |= {
            h.document_id for h in search_chunks(scope=scope, query_text=query, lanes=(lane,), limit=200).hits
        }
    return set(
        Document.objects.filter(pk__in=found, connector=connector).values_list("external_id", flat=True)
    )


def live(connector: Connector) -> set[str]:
    return set(connector.documents.filter(deleted_at__isnull=True).values_list("external_id", flat=True))
