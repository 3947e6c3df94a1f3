"""Bulk ingestion: many documents per transaction, embedding of the next batch overlapped with writes.

Unchanged documents (same content hash and title) are neither re-chunked nor re-embedded; their
other fields go through `document_upsert` only when they differ.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from django.db import transaction

from knowledge.models import Connector, Document, Environment, Principal
from knowledge.pipeline.active import active_embedder
from knowledge.pipeline.chunkers.base import ChunkSource, ChunkText
from knowledge.pipeline.embedders.base import Embedder
from knowledge.pipeline.registry import get_chunker
from knowledge.services.access import acl_tokens
from knowledge.services.chunks import PreparedChunks, chunks_replace
from knowledge.services.documents import _check_size, content_hash, document_upsert
from knowledge.services.table_statistics import tables_analyze_after_bulk_write


@dataclass(frozen=True)
class SourceDocument:
    """One document as a connector or loader produced it."""

    external_id: str
    content: str
    title: str = ""
    source_url: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    language: str = "english"
    is_public: bool = False
    environment: Environment | None = None
    principals: tuple[Principal, ...] = ()


@dataclass
class IngestStats:
    documents: int = 0
    written: int = 0
    unchanged: int = 0
    chunks: int = 0
    seconds: float = 0.0

    @property
    def docs_per_second(self) -> float:
        return self.documents / self.seconds if self.seconds else 0.0

    @property
    def chunks_per_second(self) -> float:
        return self.chunks / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class _Batch:
    sources: list[SourceDocument]
    chunks: list[list[ChunkText]]
    vectors: list[list[list[float]]]


def _batches(documents: Iterable[SourceDocument], size: int) -> Iterator[list[SourceDocument]]:
    iterator = iter(documents)
    while batch := list(islice(iterator, size)):
        yield batch


def _stored_state(connector: Connector, batch: list[SourceDocument]) -> dict[str, tuple[Any, ...]]:
    """external id → (content hash, other fields, principal ids) of the batch's stored documents."""
    rows = Document.objects.filter(connector=connector, external_id__in=[d.external_id for d in batch])
    principals: dict[int, set[int]] = {}
    through = Document.allowed_principals.through
    for document_id, principal_id in through.objects.filter(document__in=rows).values_list(
        "document_id", "principal_id"
    ):
        principals.setdefault(document_id, set()).add(principal_id)
    return {
        d.external_id: (
            d.content_hash,
            (d.title, d.source_url, d.metadata, d.language, d.environment_id, d.is_public, d.deleted_at),
            principals.get(d.pk, set()),
        )
        for d in rows
    }


def _needs_chunks(connector: Connector, batch: list[SourceDocument]) -> list[SourceDocument]:
    """The documents whose content changed; unchanged ones are refreshed without re-embedding."""
    stored = _stored_state(connector, batch)
    stale = []
    for source in batch:
        state = stored.get(source.external_id)
        if state is None or state[0] != content_hash(source.content):
            stale.append(source)
            continue
        environment = source.environment or connector.environment
        fields = (
            source.title,
            source.source_url,
            source.metadata,
            source.language,
            environment.pk if environment else None,
            source.is_public,
            None,
        )
        if fields != state[1] or {p.pk for p in source.principals} != state[2]:
            _upsert_one(connector, source)
    return stale


def _prepare(sources: list[SourceDocument], embedder: Embedder) -> _Batch:
    chunker = get_chunker()
    chunks = [chunker.chunk(ChunkSource(s.title, s.content, s.metadata)) for s in sources]
    flat = embedder.embed_batch([c.text for doc in chunks for c in doc]) if any(chunks) else []
    vectors, start = [], 0
    for doc_chunks in chunks:
        vectors.append(flat[start : start + len(doc_chunks)])
        start += len(doc_chunks)
    return _Batch(sources, chunks, vectors)


def _upsert_one(connector: Connector, s: SourceDocument) -> None:
    document_upsert(
        connector=connector,
        external_id=s.external_id,
        content=s.content,
        title=s.title,
        source_url=s.source_url,
        metadata=s.metadata,
        language=s.language,
        environment=s.environment,
        is_public=s.is_public,
        principals=s.principals,
    )


def _write(connector: Connector, batch: _Batch, model: str) -> int:
    """Upsert the batch's documents and replace their chunks in one transaction."""
    rows = [
        Document(
            tenant_id=connector.tenant_id,
            connector=connector,
            external_id=s.external_id,
            title=s.title,
            source_url=s.source_url,
            content=s.content,
            content_hash=content_hash(s.content),
            metadata=s.metadata,
            language=s.language,
            environment=s.environment or connector.environment,
            is_public=s.is_public,
        )
        for s in batch.sources
    ]
    with transaction.atomic():
        known = set(
            Document.objects.filter(
                connector=connector, external_id__in=[r.external_id for r in rows]
            ).values_list("external_id", flat=True)
        )
        saved = Document.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["connector", "external_id"],
            update_fields=[
                *("title", "source_url", "content", "content_hash", "metadata", "language"),
                *("environment", "is_public", "deleted_at", "updated_at"),  # seen again: restored
            ],
        )
        through = Document.allowed_principals.through
        through.objects.filter(document_id__in=[d.pk for d in saved]).delete()
        through.objects.bulk_create(
            [
                through(document_id=d.pk, principal_id=p.pk)
                for d, s in zip(saved, batch.sources, strict=True)
                for p in s.principals
            ]
        )
        prepared = [
            PreparedChunks(
                d,
                tuple(acl_tokens(is_public=s.is_public, principals=s.principals)),
                c,
                v,
                is_new=d.external_id not in known,
            )
            for d, s, c, v in zip(saved, batch.sources, batch.chunks, batch.vectors, strict=True)
        ]
        return chunks_replace(prepared=prepared, model=model)


def documents_ingest(
    *,
    connector: Connector,
    documents: Iterable[SourceDocument],
    batch_size: int = 32,
    on_progress: Callable[[int, int], None] | None = None,
) -> IngestStats:
    """Ingest documents in batches; `on_progress(new documents, new chunks)` reports progress."""
    stats, started = IngestStats(), time.monotonic()
    embedder = active_embedder()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-embed") as pool:
        pending: Future[_Batch] | None = None
        for batch in _batches(documents, batch_size):
            sources = unique_sources(batch)
            for source in sources:
                _check_size(source.content)
            stale = _needs_chunks(connector, sources)
            stats.documents += len(sources)
            stats.unchanged += len(sources) - len(stale)
            if on_progress:
                on_progress(len(sources), 0)
            # Embed this batch in the background while the previous one is written.
            following = pool.submit(_prepare, stale, embedder) if stale else None
            if pending is not None:
                _flush(connector, pending.result(), embedder.name, stats, on_progress)
            pending = following
        if pending is not None:
            _flush(connector, pending.result(), embedder.name, stats, on_progress)
    tables_analyze_after_bulk_write(chunks_written=stats.chunks)
    stats.seconds = time.monotonic() - started
    return stats


def _flush(
    connector: Connector,
    batch: _Batch,
    model: str,
    stats: IngestStats,
    on_progress: Callable[[int, int], None] | None,
) -> None:
    written = _write(connector, batch, model)
    stats.written += len(batch.sources)
    stats.chunks += written
    if on_progress:
        on_progress(0, written)


def unique_sources(documents: Sequence[SourceDocument]) -> list[SourceDocument]:
    """Last one wins when a loader yields the same external id twice."""
    return list({d.external_id: d for d in documents}.values())
