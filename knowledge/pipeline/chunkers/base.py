"""The chunker contract and its value types."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class ChunkSource:
    """What a chunker needs of a document."""

    title: str
    content: str
    metadata: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class ChunkText:
    """One chunk: its index in the document, optional parent index, text and metadata."""

    index: int
    text: str
    parent_index: int | None = None
    metadata: dict[str, object] = field(default_factory=dict)

    @property
    def token_count(self) -> int:
        return count_tokens(self.text)


def count_tokens(text: str) -> int:
    """Whitespace-token count; a cheap, model-independent budget unit."""
    return len(WORD.findall(text))


class Chunker:
    """Splits a document into chunks numbered 0..n-1; never returns an empty list for non-empty text."""

    def chunk(self, document: ChunkSource) -> list[ChunkText]:
        raise NotImplementedError("chunkers must implement chunk()")
