"""`documents_write`: validate, chunk and embed (overlapped), then apply each batch under row locks.

One service for one document and for many: the API, `manage.py ingest`, connector syncs, the evals
and the admin all call it, so validation, ACL ownership and locking are the same on every path.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice

from django.db import DataError, connection

from knowledge.connectors.types import SourceDocument, SourceError
from knowledge.errors import KnowledgeError, PayloadTooLarge
from knowledge.models import Connector, Document
from knowledge.pipeline.active import active_embedder
from knowledge.pipeline.embedders.base import Embedder
from knowledge.services.writes.apply import Applied, apply_batch
from knowledge.services.writes.prepare import Prepared, prepare
from knowledge.services.writes.validate import BatchContext, Resolved, validate_batch
from knowledge.store.chunks import count_document_chunks
from knowledge.store.statistics import tables_analyze_after_bulk_write

logger = logging.getLogger(__name__)
UNINDEXABLE = (
    "cannot be indexed: PostgreSQL refused the document (usually a text too large for its full-text "
    "index: split it into smaller documents)"
)

Progress = Callable[[int, int], None]


@dataclass
class WriteStats:
    """Counts of one write run; `errors` name the documents that were not written and why."""

    documents: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    chunks: int = 0
    seconds: float = 0.0
    errors: list[SourceError] = field(default_factory=list)
    documents_by_id: dict[str, Document] = field(default_factory=dict, repr=False)
    rechunked: set[str] = field(default_factory=set, repr=False)

    @property
    def written(self) -> int:
        return self.created + self.updated

    @property
    def docs_per_second(self) -> float:
        return self.documents / self.seconds if self.seconds else 0.0

    @property
    def chunks_per_second(self) -> float:
        return self.chunks / self.seconds if self.seconds else 0.0

    def add(self, applied: Applied) -> None:
        self.created += len(applied.created)
        self.updated += len(applied.updated)
        self.unchanged += len(applied.unchanged)
        self.chunks += applied.chunks
        self.documents_by_id.update(applied.documents)
        self.rechunked |= applied.rechunked


def unique_sources(documents: Sequence[SourceDocument]) -> list[SourceDocument]:
    """Last one wins when a loader yields the same external id twice."""
    return list({d.external_id: d for d in documents}.values())


def _batches(documents: Iterable[SourceDocument], size: int) -> Iterator[list[SourceDocument]]:
    iterator = iter(documents)
    while batch := unique_sources(list(islice(iterator, size))):
        yield batch


def _guess_stale(connector: Connector, items: Sequence[Resolved]) -> list[Resolved]:
    """An unlocked guess of which documents need chunks, so embedding can start early; the locked
    step decides for real and embeds whatever this guess missed."""
    stored = {
        external_id: (digest, title, language)
        for external_id, digest, title, language in Document.objects.filter(
            connector=connector, external_id__in=[i.external_id for i in items]
        ).values_list("external_id", "content_hash", "title", "language")
    }
    return [
        i
        for i in items
        if i.source.embedding is not None
        or stored.get(i.external_id) != (i.content_hash, i.source.title, i.language)
    ]


class _Run:
    """One `documents_write` call: validation and the overlapped prepare/apply loop."""

    def __init__(self, connector: Connector, strict: bool, on_progress: Progress | None) -> None:
        self.connector = connector
        self.strict = strict
        self.on_progress = on_progress
        self.embedder: Embedder = active_embedder()
        self.context = BatchContext.for_connector(connector)
        self.stats = WriteStats()

    def validated(self, batch: list[SourceDocument]) -> list[Resolved]:
        valid, errors = validate_batch(self.context, batch)
        if errors and self.strict:
            raise errors[0][1]
        self.stats.errors += [SourceError(f"{eid}: {exc.message}", eid) for eid, exc in errors]
        self.stats.documents += len(batch)
        if self.on_progress:
            self.on_progress(len(batch), 0)
        return valid

    def prepare(self, items: list[Resolved]) -> dict[str, Prepared]:
        return prepare(items, self.embedder)

    def apply(self, items: list[Resolved], prepared: dict[str, Prepared]) -> None:
        try:
            applied = apply_batch(self.connector, items, prepared, self.prepare, self.embedder.name)
        except DataError as exc:  # e.g. a text too large for a tsvector: find the document(s)
            if len(items) == 1:
                logger.warning("document %r cannot be indexed: %s", items[0].external_id, exc)
                self._fail(items[0], PayloadTooLarge(UNINDEXABLE, field="content"))
                return
            for item in items:
                self.apply([item], prepared)
            return
        self.stats.add(applied)
        if self.on_progress:
            self.on_progress(0, applied.chunks)

    def _fail(self, item: Resolved, error: KnowledgeError) -> None:
        if self.strict:
            raise error
        self.stats.errors.append(SourceError(f"{item.external_id}: {error.message}", item.external_id))


def documents_write(
    *,
    connector: Connector,
    documents: Iterable[SourceDocument],
    batch_size: int = 32,
    strict: bool = False,
    on_progress: Progress | None = None,
) -> WriteStats:
    """Create or update documents of a connector; unchanged ones are neither re-chunked nor re-embedded.

    Invalid documents are reported in `errors` and skipped (or, with `strict`, the first one raises).
    `on_progress(documents seen, chunks written)` reports progress. Each batch is one transaction.
    """
    run, started = _Run(connector, strict, on_progress), time.monotonic()
    if isinstance(documents, Sequence) and len(documents) <= batch_size:  # one batch: nothing to overlap
        items = run.validated(unique_sources(documents))
        if items:
            run.apply(items, run.prepare(_guess_stale(connector, items)))
        tables_analyze_after_bulk_write(chunks_written=run.stats.chunks)
        run.stats.seconds = time.monotonic() - started
        return run.stats
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-embed") as pool:
        pending: tuple[list[Resolved], Future[dict[str, Prepared]] | None] | None = None
        for batch in _batches(documents, batch_size):
            items = run.validated(batch)
            stale = _guess_stale(connector, items) if items else []
            # Embed this batch in the background while the previous one is written.
            following = (items, pool.submit(_in_thread, run.prepare, stale) if stale else None)
            if pending is not None:
                _flush(run, pending)
            pending = following
        if pending is not None:
            _flush(run, pending)
    tables_analyze_after_bulk_write(chunks_written=run.stats.chunks)
    run.stats.seconds = time.monotonic() - started
    return run.stats


def _in_thread(
    fn: Callable[[list[Resolved]], dict[str, Prepared]], items: list[Resolved]
) -> dict[str, Prepared]:
    try:
        return fn(items)
    finally:
        connection.close()  # the embedding thread may have opened one (plugin look-ups)


def _flush(run: _Run, pending: tuple[list[Resolved], Future[dict[str, Prepared]] | None]) -> None:
    items, future = pending
    if items:
        run.apply(items, future.result() if future is not None else {})


def documents_check(
    *, connector: Connector, documents: Sequence[SourceDocument]
) -> list[tuple[int, KnowledgeError]]:
    """What `documents_write` would refuse, by position, without writing (a job checks its documents
    when it is submitted; the write checks them again, as what they depend on may change)."""
    _, errors = validate_batch(BatchContext.for_connector(connector), documents)
    position = {d.external_id: i for i, d in enumerate(documents)}
    return [(position[external_id], error) for external_id, error in errors]


def source_write(*, connector: Connector, source: SourceDocument) -> tuple[Document, bool, bool, int]:
    """Write one document strictly: (document, created, re-chunked, chunk count); raises on bad input."""
    stats = documents_write(connector=connector, documents=[source], strict=True)
    document = stats.documents_by_id[source.external_id]
    count = count_document_chunks(document.pk)
    return document, stats.created == 1, source.external_id in stats.rechunked, count
