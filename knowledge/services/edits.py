"""Admin edits of documents and connectors, expressed through the write service and ACL services."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from knowledge.access.principals import connector_default_acl, principals_acl
from knowledge.connectors.types import SourceAcl, SourceDocument
from knowledge.errors import InvalidInput
from knowledge.models import Connector, Document, Principal
from knowledge.services.source_acls import documents_source_acl_set
from knowledge.services.writes import source_write

CONTENT_FIELDS = ("title", "source_url", "content", "metadata", "language", "environment")


def _source_acl(document: Document) -> SourceAcl:
    return principals_acl(is_public=document.source_is_public, principals=document.source_principals.all())


def document_admin_create(
    *, connector: Connector, external_id: str, values: dict[str, Any], principals: Sequence[Principal]
) -> Document:
    """A document an admin adds to a push connector: the admin's ACL is its source ACL."""
    if connector.pulls:
        raise InvalidInput(
            "documents of a pull connector come from its source; add them there (or use an api connector)",
            field="connector",
        )
    environment = values.get("environment")
    source = SourceDocument(
        external_id=external_id,
        content=values["content"],
        title=values.get("title", ""),
        source_url=values.get("source_url", ""),
        metadata=values.get("metadata") or {},
        language=values.get("language"),
        environment=environment.slug if environment is not None else None,
        acl=principals_acl(is_public=bool(values.get("is_public")), principals=principals),
    )
    return source_write(connector=connector, source=source)[0]


def document_admin_update(*, document: Document, values: dict[str, Any]) -> Document:
    """An admin's edit of a document's text or metadata: re-chunked and re-embedded when the text,
    title or language changed. The document's source ACL (and any override) is kept."""
    if document.connector.pulls:
        raise InvalidInput(
            "a pulled document's content comes from its source; edit it there", field="content"
        )
    merged = {name: getattr(document, name) for name in CONTENT_FIELDS} | values
    environment = merged["environment"]
    source = SourceDocument(
        external_id=document.external_id,
        content=merged["content"],
        title=merged["title"],
        source_url=merged["source_url"],
        metadata=merged["metadata"] or {},
        language=merged["language"],
        environment=environment.slug if environment is not None else None,
        acl=_source_acl(document),
        source_updated_at=document.source_updated_at,
    )
    return source_write(connector=document.connector, source=source)[0]


def connector_apply_default_acl(*, connector: Connector, batch_size: int = 500) -> int:
    """Give the connector's documents that use its default ACL the current default (admin overrides
    are kept; a document whose ACL a sync took from its source meanwhile is left alone, re-checked
    under its row lock); returns how many documents' effective ACL was set."""
    acl = connector_default_acl(connector=connector)
    documents = Document.objects.filter(connector=connector, acl_origin=Document.AclOrigin.CONNECTOR)
    pks = list(documents.values_list("pk", flat=True).order_by("pk"))
    changed = 0
    for start in range(0, len(pks), batch_size):
        changed += documents_source_acl_set(
            tenant_id=connector.tenant_id,
            document_ids=pks[start : start + batch_size],
            acl=acl,
            origin=Document.AclOrigin.CONNECTOR,
            only_origin=Document.AclOrigin.CONNECTOR,
        )
    return changed
