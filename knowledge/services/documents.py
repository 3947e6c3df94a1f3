"""Document services: upsert one document, soft delete and restore, ACL changes and overrides, delete.

Every function locks the document row before it decides, and writes the chunks' denormalised
filters in the same transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from knowledge.access.grants import effective_grants_set
from knowledge.access.principals import principals_acl
from knowledge.access.rules import source_acl_applies
from knowledge.connectors.types import SourceDocument
from knowledge.errors import InvalidInput
from knowledge.models import Connector, Document, DocumentPolicy, Environment, Principal
from knowledge.pipeline.embedders.base import CLIENT_MODEL
from knowledge.services.access import document_access_sync, schedule_index_sync
from knowledge.services.policies import (
    policy_clear_acl,
    policy_clear_deletion,
    policy_document_locked,
    policy_exists,
    policy_record_acl,
    policy_record_deletion,
)
from knowledge.services.writes import source_write
from knowledge.services.writes.validate import content_hash
from knowledge.store.chunks import delete_document_chunks

__all__ = [
    "CLIENT_MODEL",
    "UpsertResult",
    "content_hash",
    "document_clear_acl_override",
    "document_hard_delete",
    "document_policy_clear",
    "document_restore",
    "document_set_acl",
    "document_soft_delete",
    "document_upsert",
]


@dataclass(frozen=True)
class UpsertResult:
    document: Document
    created: bool
    content_changed: bool
    chunk_count: int


def _check_tenant(connector: Connector, principals: Sequence[Principal]) -> None:
    foreign = [str(p) for p in principals if p.tenant_id != connector.tenant_id]
    if foreign:
        raise InvalidInput(f"principals of another tenant: {', '.join(foreign)}", field="acl")


def document_upsert(
    *,
    connector: Connector,
    external_id: str,
    content: str,
    title: str = "",
    source_url: str = "",
    metadata: dict[str, Any] | None = None,
    language: str | None = None,
    environment: Environment | None = None,
    is_public: bool = False,
    principals: Iterable[Principal] = (),
    source_updated_at: datetime | None = None,
    embedding: Sequence[float] | None = None,
) -> UpsertResult:
    """Create or update one document whose writer states its ACL (the API, the demo, tests).

    Goes through the one write service; with a caller-supplied `embedding` the document is stored as
    one chunk carrying that vector (model `client-supplied`).
    """
    listed = list(principals)
    _check_tenant(connector, listed)
    if environment is not None and environment.tenant_id != connector.tenant_id:
        raise InvalidInput("the environment belongs to another tenant", field="environment")
    source = SourceDocument(
        external_id=external_id,
        content=content,
        title=title,
        source_url=source_url,
        metadata=metadata or {},
        language=language,
        environment=environment.slug if environment is not None else None,
        acl=principals_acl(is_public=is_public, principals=listed),
        source_updated_at=source_updated_at,
        embedding=tuple(float(v) for v in embedding) if embedding is not None else None,
    )
    document, created, rechunked, count = source_write(connector=connector, source=source)
    return UpsertResult(document=document, created=created, content_changed=rechunked, chunk_count=count)


def _locked(document: Document) -> Document:
    return Document.objects.select_for_update().get(pk=document.pk)


def document_soft_delete(
    *, document: Document, origin: str = Document.DeletionOrigin.ADMIN, actor: str = "admin"
) -> Document:
    """Hide a document from search, keeping its chunks for restore. Idempotent.

    An admin's soft delete (the default origin) survives syncs, and prunes too: it is kept by the
    document's source id (DocumentPolicy) and applies again when the source brings the document back.
    One with origin `source` is undone when the source lists the document again.
    """
    with transaction.atomic():
        locked = _locked(document)
        if locked.deleted_at is None or (origin == Document.DeletionOrigin.ADMIN != locked.deletion_origin):
            locked.deleted_at = locked.deleted_at or timezone.now()
            locked.deletion_origin = origin
            locked.save(update_fields=["deleted_at", "deletion_origin", "updated_at"])
        if origin == Document.DeletionOrigin.ADMIN:
            policy_record_deletion(document=locked, actor=actor)
        document_access_sync(document=locked)
    return locked


def document_restore(*, document: Document) -> Document:
    """Make a soft-deleted document searchable again (and forget an admin's deletion). Idempotent."""
    with transaction.atomic():
        locked = _locked(document)
        if locked.deleted_at is not None:
            locked.deleted_at = None
            locked.deletion_origin = Document.DeletionOrigin.NONE
            locked.save(update_fields=["deleted_at", "deletion_origin", "updated_at"])
        policy_clear_deletion(connector_id=locked.connector_id, external_id=locked.external_id)
        document_access_sync(document=locked)
    return locked


def document_set_acl(
    *, document: Document, is_public: bool, principals: Iterable[Principal], actor: str = "admin"
) -> Document:
    """An admin's ACL for the document: it overrides the source's ACL until cleared, and reaches the
    chunks in the same transaction."""
    listed = list(principals)
    _check_tenant(document.connector, listed)
    with transaction.atomic():
        locked = _locked(document)
        locked.is_public = is_public
        locked.acl_override_at = timezone.now()
        locked.acl_override_by = actor[:150]
        locked.save(update_fields=["is_public", "acl_override_at", "acl_override_by", "updated_at"])
        effective_grants_set(locked, listed)
        policy_record_acl(document=locked, is_public=is_public, principals=listed, actor=actor)
        document_access_sync(document=locked)
    return locked


def document_clear_acl_override(*, document: Document) -> Document:
    """Drop an admin's ACL override: the source's ACL applies again. Idempotent."""
    with transaction.atomic():
        locked = _locked(document)
        locked.is_public = locked.source_is_public
        locked.acl_override_at = None
        locked.acl_override_by = ""
        locked.save(update_fields=["is_public", "acl_override_at", "acl_override_by", "updated_at"])
        effective_grants_set(locked, locked.source_principals.all())
        policy_clear_acl(connector_id=locked.connector_id, external_id=locked.external_id)
        document_access_sync(document=locked)
    return locked


def document_policy_clear(*, policy: DocumentPolicy, acl: bool = False, deletion: bool = False) -> None:
    """An admin clears part of a policy, whether or not its document exists now. The document, when
    there is one, then uses its source's ACL again, or is restored (from an admin's deletion only)."""
    connector_id, external_id = policy.connector_id, policy.external_id
    with transaction.atomic():
        document = policy_document_locked(policy)
        if not policy_exists(policy):
            return
        document = document or policy_document_locked(policy)  # a sync may have brought it back meanwhile
        if acl:
            if document is not None and not source_acl_applies(document):
                document_clear_acl_override(document=document)
            policy_clear_acl(connector_id=connector_id, external_id=external_id)
        if deletion:
            if document is not None and document.deletion_origin == Document.DeletionOrigin.ADMIN:
                document_restore(document=document)
            policy_clear_deletion(connector_id=connector_id, external_id=external_id)


def document_hard_delete(*, document_id: int) -> bool:
    """Delete a document, its chunks and vectors; False when it did not exist. Idempotent.

    A trigger leaves a tombstone, so an external index is told even when no task runs.
    """
    with transaction.atomic():
        document = Document.objects.select_for_update().filter(pk=document_id).first()
        if document is None:
            return False
        delete_document_chunks(document_id)
        document.delete()
        schedule_index_sync([document_id])
    return True
