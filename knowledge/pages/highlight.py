"""Snippets with the query terms marked, as plain-text segments: templates escape them, nothing is HTML."""

from __future__ import annotations

import re
from dataclasses import dataclass

WORD = re.compile(r"\w+")
MIN_TERM = 2


@dataclass(frozen=True)
class Segment:
    """A piece of a snippet; `hit` pieces are rendered in <mark> (after escaping, like every piece)."""

    text: str
    hit: bool = False


def query_terms(query: str) -> list[str]:
    """Distinct words of the query, longest first (so a longer term wins over its prefix)."""
    words = {w.lower() for w in WORD.findall(query) if len(w) >= MIN_TERM}
    return sorted(words, key=lambda w: (-len(w), w))


def _pattern(terms: list[str]) -> re.Pattern[str] | None:
    # The keyword lane stems words, so mark by prefix: a term less its last two letters (at least four
    # kept) at a word start, with the rest of the word. "policy" marks "policies", "day" marks "days".
    if not terms:
        return None
    stems = [t if len(t) <= 4 else t[: max(4, len(t) - 2)] for t in terms]
    return re.compile(r"\b(?:" + "|".join(map(re.escape, stems)) + r")\w*", re.IGNORECASE)


def _window(text: str, pattern: re.Pattern[str] | None, width: int) -> tuple[int, int]:
    """Start and end of a `width`-character window around the first match (the start if none)."""
    if len(text) <= width:
        return 0, len(text)
    first = pattern.search(text) if pattern else None
    start = max(0, (first.start() if first else 0) - width // 4)
    end = min(len(text), start + width)
    start = max(0, end - width)
    return start, end


def snippet(text: str, query: str, width: int = 320) -> list[Segment]:
    """A window of `text` around the first query term, split into marked and unmarked segments."""
    pattern = _pattern(query_terms(query))
    start, end = _window(text, pattern, width)
    piece = " ".join(text[start:end].split())
    segments: list[Segment] = [Segment("…")] if start > 0 else []
    position = 0
    for match in pattern.finditer(piece) if pattern else ():
        if match.start() > position:
            segments.append(Segment(piece[position : match.start()]))
        segments.append(Segment(match.group(0), hit=True))
        position = match.end()
    if position < len(piece):
        segments.append(Segment(piece[position:]))
    if end < len(text):
        segments.append(Segment("…"))
    return segments
