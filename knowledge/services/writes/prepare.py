"""Chunking and embedding of validated documents (the slow part, done outside any lock)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from knowledge.pipeline.chunkers.base import ChunkSource, ChunkText
from knowledge.pipeline.embedders.base import CLIENT_MODEL, Embedder
from knowledge.pipeline.registry import get_chunker
from knowledge.services.writes.validate import Resolved


@dataclass(frozen=True)
class Prepared:
    """A document's chunks and one vector per chunk, made from one exact version of its text."""

    content_hash: str
    title: str
    language: str
    chunks: Sequence[ChunkText]
    vectors: Sequence[Sequence[float]]
    model: str

    def fits(self, resolved: Resolved, model: str) -> bool:
        """Whether these chunks were made from this version of the document with this embedder."""
        expected = CLIENT_MODEL if resolved.source.embedding is not None else model
        key = (resolved.content_hash, resolved.source.title, resolved.language, expected)
        return key == (self.content_hash, self.title, self.language, self.model)


def prepare(items: Sequence[Resolved], embedder: Embedder) -> dict[str, Prepared]:
    """Chunk every document and embed all their chunks in one batch; by external id."""
    chunker = get_chunker()
    out: dict[str, Prepared] = {}
    pending: list[tuple[Resolved, list[ChunkText]]] = []
    for item in items:
        source = item.source
        if source.embedding is not None:
            text = f"{source.title}\n{source.content}" if source.title else source.content
            out[item.external_id] = _prepared(
                item, [ChunkText(index=0, text=text)], [source.embedding], CLIENT_MODEL
            )
        else:
            pending.append((item, chunker.chunk(ChunkSource(source.title, source.content, source.metadata))))
    flat = embedder.embed_batch([c.text for _, chunks in pending for c in chunks]) if pending else []
    start = 0
    for item, chunks in pending:
        out[item.external_id] = _prepared(item, chunks, flat[start : start + len(chunks)], embedder.name)
        start += len(chunks)
    return out


def _prepared(
    item: Resolved, chunks: list[ChunkText], vectors: Sequence[Sequence[float]], model: str
) -> Prepared:
    return Prepared(item.content_hash, item.source.title, item.language, chunks, vectors, model)
