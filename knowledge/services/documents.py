"""Document writes: idempotent upsert (chunk, embed, index), soft delete, restore, ACL changes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from knowledge.errors import InvalidInput, PayloadTooLarge
from knowledge.models import Connector, Document, Environment, Principal
from knowledge.pipeline.active import active_embedder
from knowledge.pipeline.chunkers.base import ChunkSource, ChunkText
from knowledge.pipeline.registry import get_chunker
from knowledge.selectors.documents import is_text_search_language
from knowledge.services.access import document_access_sync, document_acl_tokens, schedule_index_sync
from knowledge.services.chunks import CLIENT_MODEL, PreparedChunks, chunks_replace
from retrieval_backends.registry import get_backend


@dataclass(frozen=True)
class UpsertResult:
    document: Document
    created: bool
    content_changed: bool
    chunk_count: int


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def _check_size(content: str) -> None:
    limit = settings.KNOWLEDGE_MAX_CONTENT_CHARS
    if len(content) > limit:
        raise PayloadTooLarge(f"content has {len(content)} characters; the limit is {limit}", field="content")


def _prepare_chunks(
    title: str, content: str, metadata: dict[str, Any], embedding: Sequence[float] | None
) -> tuple[list[ChunkText], list[list[float]]]:
    if embedding is not None:
        text = f"{title}\n{content}" if title else content
        return [ChunkText(index=0, text=text)], [list(embedding)]
    chunks = get_chunker().chunk(ChunkSource(title=title, content=content, metadata=metadata))
    return chunks, (active_embedder().embed_batch([c.text for c in chunks]) if chunks else [])


def _set_fields(document: Document, fields: dict[str, Any]) -> bool:
    changed = False
    for name, value in fields.items():
        if getattr(document, name) != value:
            setattr(document, name, value)
            changed = True
    return changed


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
    """Create or update a document; unchanged content is neither re-chunked nor re-embedded.

    With a caller-supplied `embedding` the document is stored as one chunk carrying that vector
    (model `client-supplied`); otherwise the active chunker and embedder run.
    """
    _check_size(content)
    if language is not None and not is_text_search_language(language):
        raise InvalidInput(f"unknown text-search language {language!r}", field="language")
    digest = content_hash(content)
    existing = Document.objects.filter(connector=connector, external_id=external_id).first()
    needs_chunks = existing is None or existing.content_hash != digest or existing.title != title
    if embedding is not None:
        needs_chunks = True  # the caller's vector may differ even when the text does not
    chunks: list[ChunkText] = []
    vectors: list[list[float]] = []
    model = CLIENT_MODEL if embedding is not None else active_embedder().name
    if needs_chunks:
        chunks, vectors = _prepare_chunks(title, content, metadata or {}, embedding)
    principal_list = list(principals)
    foreign = [str(p) for p in principal_list if p.tenant_id != connector.tenant_id]
    if foreign:
        raise InvalidInput(f"principals of another tenant: {', '.join(foreign)}", field="acl")
    with transaction.atomic():
        document, created = Document.objects.select_for_update().get_or_create(
            connector=connector,
            external_id=external_id,
            defaults={"tenant_id": connector.tenant_id, "content": content, "content_hash": digest},
        )
        _set_fields(
            document,
            {
                "title": title,
                "source_url": source_url,
                "content": content,
                "content_hash": digest,
                "metadata": metadata or {},
                "language": language or document.language,
                "environment": environment or connector.environment,
                "is_public": is_public,
                "source_updated_at": source_updated_at,
                "deleted_at": None,
            },
        )
        document.full_clean(exclude=["allowed_principals"])
        document.save()
        document.allowed_principals.set(principal_list)
        if needs_chunks:
            tokens = tuple(document_acl_tokens(document=document))
            count = chunks_replace(
                prepared=[PreparedChunks(document, tokens, chunks, vectors, is_new=created)], model=model
            )
        else:
            document_access_sync(document=document)
            count = get_backend().count_document_chunks(document.pk)
    return UpsertResult(document=document, created=created, content_changed=needs_chunks, chunk_count=count)


def document_soft_delete(*, document: Document) -> Document:
    """Hide a document from search, keeping its chunks for restore. Idempotent."""
    if document.deleted_at is None:
        document.deleted_at = timezone.now()
        document.save(update_fields=["deleted_at", "updated_at"])
    document_access_sync(document=document)
    return document


def document_restore(*, document: Document) -> Document:
    """Make a soft-deleted document searchable again. Idempotent."""
    if document.deleted_at is not None:
        document.deleted_at = None
        document.save(update_fields=["deleted_at", "updated_at"])
    document_access_sync(document=document)
    return document


def document_set_acl(*, document: Document, is_public: bool, principals: Iterable[Principal]) -> Document:
    """Replace a document's ACL and push it to its chunks in the same transaction."""
    with transaction.atomic():
        document.is_public = is_public
        document.save(update_fields=["is_public", "updated_at"])
        document.allowed_principals.set(list(principals))
        document_access_sync(document=document)
    return document


def document_hard_delete(*, document_id: int) -> bool:
    """Delete a document, its chunks and vectors; False when it did not exist. Idempotent."""
    with transaction.atomic():
        document = Document.objects.select_for_update().filter(pk=document_id).first()
        if document is None:
            return False
        get_backend().delete_document_chunks(document_id)
        document.delete()
        schedule_index_sync([document_id])
    return True
