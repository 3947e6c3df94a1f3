"""Splits Markdown at headings and prefixes each chunk with its heading path, within a token budget."""

from __future__ import annotations

import re

from django.conf import settings

from knowledge.pipeline.chunkers.base import WORD, Chunker, ChunkSource, ChunkText

HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def _sections(content: str) -> list[tuple[list[str], str]]:
    """(heading path, body) pairs in document order."""
    path: list[tuple[int, str]] = []
    sections: list[tuple[list[str], str]] = []
    body: list[str] = []

    def flush() -> None:
        text = "\n".join(body).strip()
        if text:
            sections.append(([h for _, h in path], text))
        body.clear()

    for line in content.splitlines():
        match = HEADING.match(line)
        if match:
            flush()
            level = len(match.group(1))
            path = [(lvl, h) for lvl, h in path if lvl < level] + [(level, match.group(2))]
        else:
            body.append(line)
    flush()
    return sections


def _windows(words: list[str], size: int, overlap: int) -> list[list[str]]:
    if len(words) <= size:
        return [words]
    step = max(1, size - overlap)
    return [words[i : i + size] for i in range(0, max(1, len(words) - overlap), step)]


class HeadingPrefixChunker(Chunker):
    """Heading-aware chunks of at most `max_tokens` body words with `overlap` words of overlap."""

    def __init__(self, max_tokens: int | None = None, overlap: int | None = None) -> None:
        self.max_tokens = max_tokens or settings.KNOWLEDGE_CHUNK_TOKENS
        self.overlap = min(overlap or settings.KNOWLEDGE_CHUNK_OVERLAP, self.max_tokens // 2)

    def chunk(self, document: ChunkSource) -> list[ChunkText]:
        chunks: list[ChunkText] = []
        for headings, body in _sections(document.content) or [([], document.content)]:
            prefix_parts = [document.title, *headings] if document.title else headings
            # A first heading that repeats the title adds nothing.
            prefix = " > ".join(
                p for i, p in enumerate(prefix_parts) if p and (i == 0 or p != prefix_parts[i - 1])
            )
            for window in _windows(WORD.findall(body), self.max_tokens, self.overlap):
                text = f"{prefix}\n{' '.join(window)}" if prefix else " ".join(window)
                chunks.append(ChunkText(index=len(chunks), text=text, metadata={"headings": headings}))
        if not chunks and document.title:
            chunks.append(ChunkText(index=0, text=document.title))
        return chunks
