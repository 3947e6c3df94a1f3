"""Splits Markdown at headings and prefixes each chunk with its heading path, within a token budget."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from knowledge.pipeline.chunkers.base import Chunker, ChunkSource, ChunkText, count_tokens
from knowledge.pipeline.chunkers.fixed_size import sizes
from knowledge.pipeline.chunkers.pages import PAGE_BREAK
from knowledge.pipeline.chunkers.spans import recursive_spans

HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^ {0,3}(```|~~~)")


@dataclass(frozen=True)
class _Section:
    """A heading path and its body on one page (`page` is None for unpaged text)."""

    headings: list[str]
    body: str
    page: int | None = None


def _lines(content: str) -> Iterator[tuple[int | None, str]]:
    """Every line with its 1-based page (None when the content has no page breaks)."""
    pages = content.split(PAGE_BREAK)
    for number, page in enumerate(pages, start=1):
        for line in page.splitlines():
            yield (number if len(pages) > 1 else None), line


def _sections(content: str) -> list[_Section]:
    """Sections in document order, split at page breaks too (a chunk cites one page); `#` lines inside
    fenced code are not headings."""
    path: list[tuple[int, str]] = []
    sections: list[_Section] = []
    body: list[str] = []
    in_fence = False
    current: int | None = None

    def flush() -> None:
        text = "\n".join(body).strip()
        if text:
            sections.append(_Section([h for _, h in path], text, current))
        body.clear()

    for page, line in _lines(content):
        if page != current:
            flush()
            current = page
        if FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else HEADING.match(line)
        if match:
            flush()
            level = len(match.group(1))
            path = [(lvl, h) for lvl, h in path if lvl < level] + [(level, match.group(2))]
        else:
            body.append(line)
    flush()
    return sections


def _prefix(title: str, headings: list[str]) -> str:
    parts = [title, *headings] if title else headings
    # A first heading that repeats the title adds nothing.
    return " > ".join(p for i, p in enumerate(parts) if p and (i == 0 or p != parts[i - 1]))


class HeadingPrefixChunker(Chunker):
    """Heading-aware chunks of at most `max_tokens` tokens; a section too long for one chunk is split at
    paragraphs, then sentences, then words, and each piece repeats up to `overlap` tokens of the previous.

    The heading prefix counts against the budget, but the body always keeps at least half of it. Body
    text is kept verbatim (line breaks, lists and code survive). In paged text (form feeds between PDF
    pages or slides) no chunk crosses a page break, and each carries `metadata["page"]`.
    """

    def __init__(self, max_tokens: int | None = None, overlap: int | None = None) -> None:
        self.max_tokens, self.overlap = sizes(max_tokens, overlap)

    def chunk(self, document: ChunkSource) -> list[ChunkText]:
        chunks: list[ChunkText] = []
        for section in _sections(document.content) or [_Section([], document.content)]:
            prefix = _prefix(document.title, section.headings)
            budget = max(self.max_tokens - count_tokens(prefix), self.max_tokens // 2, 1)
            body = section.body
            for start, end in recursive_spans(body, (0, len(body)), budget, min(self.overlap, budget // 2)):
                text = f"{prefix}\n{body[start:end]}" if prefix else body[start:end]
                metadata: dict[str, object] = {"headings": section.headings}
                if section.page is not None:
                    metadata["page"] = section.page
                chunks.append(ChunkText(index=len(chunks), text=text, metadata=metadata))
        if not chunks and document.title:
            chunks.append(ChunkText(index=0, text=document.title))
        return chunks
