"""Fixed-size chunks: windows of `max_tokens` whitespace tokens with overlap, blind to structure."""

from __future__ import annotations

from knowledge.pipeline.chunkers.base import Chunker, ChunkSource, ChunkText
from knowledge.pipeline.chunkers.pages import PageIndex
from knowledge.pipeline.chunkers.spans import windows, word_spans

DEFAULT_TOKENS = 256  # the defaults of KNOWLEDGE_CHUNK_TOKENS and _OVERLAP, which reach here as options
DEFAULT_OVERLAP = 32


def sizes(max_tokens: int | None, overlap: int | None) -> tuple[int, int]:
    """The budget and overlap (the defaults when not given); overlap ≤ budget/2."""
    size = max_tokens if max_tokens is not None else DEFAULT_TOKENS
    overlap = overlap if overlap is not None else DEFAULT_OVERLAP
    if size <= 0 or overlap < 0:
        raise ValueError(f"need max_tokens > 0 and overlap >= 0, got {size}, {overlap}")
    return size, min(overlap, size // 2)


def title_only(document: ChunkSource) -> list[ChunkText]:
    """The one chunk of a document whose content is blank (none when the title is blank too)."""
    return [ChunkText(index=0, text=document.title.strip())] if document.title.strip() else []


class FixedSizeChunker(Chunker):
    def __init__(self, max_tokens: int | None = None, overlap: int | None = None) -> None:
        self.max_tokens, self.overlap = sizes(max_tokens, overlap)

    def chunk(self, document: ChunkSource) -> list[ChunkText]:
        text = document.content
        spans = windows(word_spans(text), self.max_tokens, self.overlap)
        pages = PageIndex(text)
        chunks = [
            ChunkText(index=i, text=text[a:b], metadata=pages.metadata(a)) for i, (a, b) in enumerate(spans)
        ]
        return chunks or title_only(document)
