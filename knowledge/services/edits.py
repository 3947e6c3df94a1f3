"""Admin edits of documents and connectors, expressed through the write service and ACL services."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction

from knowledge.connectors.types import SourceAcl, SourceDocument
from knowledge.errors import InvalidInput
from knowledge.models import Connector, Document, Principal
from knowledge.services.access import documents_access_sync
from knowledge.services.acl import principals_acl
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
    are kept); returns how many documents' effective ACL was set."""
    acl = principals_acl(is_public=connector.default_is_public, principals=connector.default_principals.all())
    ids = list(connector.default_principals.values_list("pk", flat=True))
    documents = Document.objects.filter(connector=connector, acl_origin=Document.AclOrigin.CONNECTOR)
    pks = list(documents.values_list("pk", flat=True).order_by("pk"))
    changed = 0
    for start in range(0, len(pks), batch_size):
        changed += _apply_default(pks[start : start + batch_size], acl.public, ids)
    return changed


def _apply_default(pks: list[int], public: bool, principal_ids: list[int]) -> int:
    source_through = Document.source_principals.through
    effective_through = Document.allowed_principals.through
    with transaction.atomic():
        locked = list(Document.objects.select_for_update().filter(pk__in=pks).order_by("pk"))
        Document.objects.filter(pk__in=pks).update(source_is_public=public)
        source_through.objects.filter(document_id__in=pks).delete()
        source_through.objects.bulk_create(
            [source_through(document_id=d, principal_id=p) for d in pks for p in principal_ids]
        )
        free = [d.pk for d in locked if not d.acl_overridden]
        Document.objects.filter(pk__in=free).update(is_public=public)
        effective_through.objects.filter(document_id__in=free).delete()
        effective_through.objects.bulk_create(
            [effective_through(document_id=d, principal_id=p) for d in free for p in principal_ids]
        )
        documents_access_sync(document_ids=free)
    return len(free)
