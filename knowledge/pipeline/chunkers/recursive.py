"""Recursive chunks: split at paragraphs, then sentences, then words, and merge pieces up to the budget."""

from __future__ import annotations

from knowledge.pipeline.chunkers.base import Chunker, ChunkSource, ChunkText
from knowledge.pipeline.chunkers.fixed_size import sizes, title_only
from knowledge.pipeline.chunkers.pages import PageIndex
from knowledge.pipeline.chunkers.spans import recursive_spans


class RecursiveChunker(Chunker):
    """Chunks of at most `max_tokens` tokens that end at the coarsest boundary that fits.

    A paragraph is only split when it exceeds the budget (then at sentences, then at words); consecutive
    small pieces are merged, and a new chunk repeats trailing pieces of the previous one up to `overlap`.
    """

    def __init__(self, max_tokens: int | None = None, overlap: int | None = None) -> None:
        self.max_tokens, self.overlap = sizes(max_tokens, overlap)

    def chunk(self, document: ChunkSource) -> list[ChunkText]:
        text = document.content
        spans = recursive_spans(text, (0, len(text)), self.max_tokens, self.overlap)
        pages = PageIndex(text)
        chunks = [
            ChunkText(index=i, text=text[a:b], metadata=pages.metadata(a)) for i, (a, b) in enumerate(spans)
        ]
        return chunks or title_only(document)
