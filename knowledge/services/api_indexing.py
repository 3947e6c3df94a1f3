"""Indexing through the API: the tenant's push connector, and the request as the document's ACL source."""

from __future__ import annotations

from typing import Any

from knowledge.connectors.types import SourceAcl, SourceDocument
from knowledge.errors import Conflict
from knowledge.models import Connector, Tenant
from knowledge.services.connectors import connector_ensure
from knowledge.services.documents import UpsertResult
from knowledge.services.writes import source_write

API_CONNECTOR_NAME = "api"


def api_connector(*, tenant: Tenant) -> Connector:
    """The tenant's push connector that API-indexed documents belong to (created on first use).

    :raises Conflict: when the tenant's connector of that name is not of kind `api` (an admin made a
        folder or web connector called "api"): API pushes never land in a pull connector, whose
        syncs would prune or re-permission them.
    """
    connector, _ = connector_ensure(tenant=tenant, name=API_CONNECTOR_NAME, kind=Connector.Kind.API)
    if connector.kind != Connector.Kind.API:
        raise Conflict(
            f"the tenant's connector named {API_CONNECTOR_NAME!r} is a {connector.kind} connector; API "
            f"pushes go only to a connector of kind api: rename that connector in the admin",
            field="connector",
        )
    return connector


def api_connector_id(*, tenant: Tenant) -> int | None:
    """The id of the tenant's API push connector, without creating it (reads and deletes); None when
    there is none (so there is nothing of it to find)."""
    return (
        Connector.objects.filter(tenant=tenant, name=API_CONNECTOR_NAME, kind=Connector.Kind.API)
        .values_list("pk", flat=True)
        .first()
    )


def api_source(data: dict[str, Any]) -> SourceDocument:
    """The source document of a validated /index body (also a stored job item's payload). A body
    without `acl` is private; `"acl": null` (only `source_payload` writes it) is the connector's default."""
    acl = data.get("acl") or {}
    embedding = data.get("embedding")
    source_acl = (
        None
        if "acl" in data and data["acl"] is None
        else SourceAcl.of(
            public=acl.get("public", False), users=acl.get("users", ()), groups=acl.get("groups", ())
        )
    )
    return SourceDocument(
        external_id=data["id"],
        content=data["content"],
        title=data.get("title", ""),
        source_url=data.get("source_url", ""),
        metadata=data.get("metadata") or {},
        language=data.get("language"),
        environment=data.get("environment"),
        acl=source_acl,
        embedding=tuple(embedding) if embedding is not None else None,
    )


def source_payload(source: SourceDocument) -> dict[str, Any]:
    """A loaded document as a job item's payload (`api_source` reads it back unchanged)."""
    payload: dict[str, Any] = {
        "id": source.external_id,
        "content": source.content,
        "title": source.title,
        "source_url": source.source_url,
        "metadata": source.metadata,
        "acl": None
        if source.acl is None
        else {
            "public": source.acl.public,
            "users": list(source.acl.users),
            "groups": list(source.acl.groups),
        },
    }
    for name in ("language", "environment"):
        if getattr(source, name) is not None:
            payload[name] = getattr(source, name)
    if source.embedding is not None:
        payload["embedding"] = list(source.embedding)
    return payload


def api_document_index(*, tenant: Tenant, data: dict[str, Any]) -> UpsertResult:
    """Upsert one document from a validated /index body; its `acl` is the document's source ACL."""
    source = api_source(data)
    document, created, rechunked, count = source_write(connector=api_connector(tenant=tenant), source=source)
    return UpsertResult(document=document, created=created, content_changed=rechunked, chunk_count=count)
