"""Chunking and embedding of validated documents (the slow part, done outside any lock)."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from knowledge.pipeline.chunkers.base import ChunkSource, ChunkText
from knowledge.pipeline.embedders.base import CLIENT_MODEL, Embedder
from knowledge.pipeline.registry import get_chunker
from knowledge.services.writes.validate import Resolved

# Chunks go to the embedder this many at a time and their vectors are kept as float32 arrays (what
# pgvector stores): 1.5 KB per 384-dimension chunk instead of 12 KB of Python floats, so a document
# near the 2,000,000-character limit does not hold thousands of float lists at once.
EMBED_SLICE = 256


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
    flat = embedded(embedder, [c.text for _, chunks in pending for c in chunks])
    start = 0
    for item, chunks in pending:
        out[item.external_id] = _prepared(item, chunks, flat[start : start + len(chunks)], embedder.name)
        start += len(chunks)
    return out


def embedded(embedder: Embedder, texts: Sequence[str]) -> list[array[float]]:
    """One compact float32 vector per text, embedded `EMBED_SLICE` texts at a time."""
    out: list[array[float]] = []
    for start in range(0, len(texts), EMBED_SLICE):
        out += [array("f", v) for v in embedder.embed_batch(texts[start : start + EMBED_SLICE])]
    return out


def _prepared(
    item: Resolved, chunks: list[ChunkText], vectors: Sequence[Sequence[float]], model: str
) -> Prepared:
    return Prepared(item.content_hash, item.source.title, item.language, chunks, vectors, model)
