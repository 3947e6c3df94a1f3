"""Character spans of a text (words, sentences, paragraphs) and token-budget windows over them."""

from __future__ import annotations

import re
from collections.abc import Sequence

from knowledge.pipeline.chunkers.base import WORD, count_tokens

Span = tuple[int, int]

PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n\s*")


def word_spans(text: str, span: Span | None = None) -> list[Span]:
    """The whitespace-separated words of `text` (or of `span` inside it)."""
    start, end = span or (0, len(text))
    return [(m.start(), m.end()) for m in WORD.finditer(text, start, end)]


def split_spans(text: str, span: Span, separator: re.Pattern[str]) -> list[Span]:
    """The non-blank pieces of `span` between matches of `separator`, trimmed of whitespace."""
    start, end = span
    pieces: list[Span] = []
    cursor = start
    for match in separator.finditer(text, start, end):
        pieces.append((cursor, match.start()))
        cursor = match.end()
    pieces.append((cursor, end))
    return [trimmed for piece in pieces if (trimmed := _trim(text, piece)) is not None]


def _trim(text: str, span: Span) -> Span | None:
    words = word_spans(text, span)
    return (words[0][0], words[-1][1]) if words else None


def windows(words: Sequence[Span], size: int, overlap: int) -> list[Span]:
    """Spans of consecutive runs of at most `size` words, each sharing `overlap` words with the previous."""
    if not words:
        return []
    if len(words) <= size:
        return [(words[0][0], words[-1][1])]
    overlap = min(overlap, size // 2)
    step = max(1, size - overlap)
    runs = [words[i : i + size] for i in range(0, max(1, len(words) - overlap), step)]
    return [(run[0][0], run[-1][1]) for run in runs]


def pack(text: str, pieces: Sequence[Span], size: int, overlap: int = 0) -> list[Span]:
    """Greedily merge consecutive pieces (each of at most `size` tokens) into spans of at most `size` tokens.

    A new span starts with the trailing pieces of the previous one that fit in `overlap` tokens.
    """
    tokens = [count_tokens(text[a:b]) for a, b in pieces]
    spans: list[Span] = []
    current: list[int] = []
    for i, n in enumerate(tokens):
        if current and sum(tokens[j] for j in current) + n > size:
            spans.append((pieces[current[0]][0], pieces[current[-1]][1]))
            current = _carry(current, tokens, min(overlap, size - n))
        current.append(i)
    if current:
        spans.append((pieces[current[0]][0], pieces[current[-1]][1]))
    return spans


def _carry(current: list[int], tokens: Sequence[int], budget: int) -> list[int]:
    carried: list[int] = []
    for j in reversed(current[1:]):
        if sum(tokens[k] for k in carried) + tokens[j] > budget:
            break
        carried.insert(0, j)
    return carried


def recursive_spans(
    text: str, span: Span, size: int, overlap: int = 0, separators: Sequence[re.Pattern[str]] | None = None
) -> list[Span]:
    """Split at paragraphs, then sentences, then words, only where a piece exceeds `size` tokens."""
    levels = list(separators if separators is not None else (PARAGRAPH_BREAK, SENTENCE_BREAK))
    if count_tokens(text[span[0] : span[1]]) <= size:
        return [s for s in [_trim(text, span)] if s is not None]
    if not levels:
        return windows(word_spans(text, span), size, overlap)
    pieces: list[Span] = []
    for piece in split_spans(text, span, levels[0]):
        pieces.extend(recursive_spans(text, piece, size, overlap, levels[1:]))
    return pack(text, pieces, size, overlap)
