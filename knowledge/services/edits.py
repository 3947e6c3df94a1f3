"""Admin edits of documents, expressed through the write service and ACL services."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from knowledge.access.principals import principals_acl
from knowledge.connectors.types import SourceAcl, SourceDocument
from knowledge.errors import InvalidInput
from knowledge.models import Connector, Document, Principal
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
