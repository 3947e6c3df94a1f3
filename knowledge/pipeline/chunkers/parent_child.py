"""Parent-child chunks: large parents for context, small children for precise matching.

Representation: parents are chunks too. Each parent (at most `parent_tokens` tokens, cut by the
recursive splitter) is immediately followed by its children (at most `child_tokens` tokens, cut from
the parent's text the same way). A parent has `parent_index=None` and `metadata["role"] == "parent"`;
a child has `parent_index` = its parent's chunk index and `metadata["role"] == "child"`. A parent that
already fits in one child is emitted once, as a `"leaf"` (no parent, no children), so no text is indexed
twice at the same granularity. Indexes run 0..n-1 in document order. Parent expansion: replace a child
hit by the chunk `(document_id, parent_index)`.
"""

from __future__ import annotations

from knowledge.pipeline.chunkers.base import Chunker, ChunkSource, ChunkText, count_tokens
from knowledge.pipeline.chunkers.fixed_size import DEFAULT_TOKENS, title_only
from knowledge.pipeline.chunkers.pages import PageIndex
from knowledge.pipeline.chunkers.spans import Span, recursive_spans


class ParentChildChunker(Chunker):
    def __init__(
        self, parent_tokens: int | None = None, child_tokens: int | None = None, overlap: int = 0
    ) -> None:
        self.parent_tokens = parent_tokens if parent_tokens is not None else DEFAULT_TOKENS
        self.child_tokens = child_tokens if child_tokens is not None else max(1, self.parent_tokens // 4)
        if not 0 < self.child_tokens <= self.parent_tokens or overlap < 0:
            raise ValueError(
                "need 0 < child_tokens <= parent_tokens and overlap >= 0, "
                f"got {self.child_tokens}, {self.parent_tokens}, {overlap}"
            )
        self.overlap = min(overlap, self.child_tokens // 2)

    def chunk(self, document: ChunkSource) -> list[ChunkText]:
        text = document.content
        chunks: list[ChunkText] = []
        pages = PageIndex(text)
        for parent in recursive_spans(text, (0, len(text)), self.parent_tokens):
            chunks.extend(self._family(text, parent, len(chunks), pages))
        return chunks or title_only(document)

    def _family(self, text: str, parent: Span, first: int, pages: PageIndex) -> list[ChunkText]:
        body = text[parent[0] : parent[1]]
        if count_tokens(body) <= self.child_tokens:
            return [ChunkText(index=first, text=body, metadata=pages.metadata(parent[0], role="leaf"))]
        children = recursive_spans(text, parent, self.child_tokens, self.overlap)
        return [ChunkText(index=first, text=body, metadata=pages.metadata(parent[0], role="parent"))] + [
            ChunkText(
                index=first + i, text=text[a:b], parent_index=first, metadata=pages.metadata(a, role="child")
            )
            for i, (a, b) in enumerate(children, start=1)
        ]
