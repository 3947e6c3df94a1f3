"""Sentence-level TF-IDF compression: keep each hit's sentences that best match the query, within budget."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from knowledge.pipeline.chunkers.base import count_tokens
from knowledge.pipeline.chunkers.spans import SENTENCE_BREAK, Span, split_spans
from knowledge.pipeline.compressors.base import Compressor
from knowledge.pipeline.types import Candidate, Query

TERM = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class _Sentence:
    span: Span
    tokens: int
    score: float


def _terms(text: str) -> Counter[str]:
    return Counter(TERM.findall(text.lower()))


def _tfidf(counts: Counter[str], idf: dict[str, float]) -> dict[str, float]:
    return {term: n * idf.get(term, 0.0) for term, n in counts.items()}


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    dot = sum(weight * b.get(term, 0.0) for term, weight in a.items())
    norms = math.sqrt(sum(w * w for w in a.values())) * math.sqrt(sum(w * w for w in b.values()))
    return dot / norms if norms else 0.0


def score_sentences(query: str, contents: Sequence[str]) -> list[list[_Sentence]]:
    """Each content's sentences, scored by TF-IDF cosine to the query (IDF over all these sentences)."""
    spans = [split_spans(text, (0, len(text)), SENTENCE_BREAK) for text in contents]
    counts = [[_terms(text[a:b]) for a, b in s] for text, s in zip(contents, spans, strict=True)]
    total = sum(len(c) for c in counts)
    frequency: Counter[str] = Counter(term for per_hit in counts for c in per_hit for term in c)
    idf = {term: math.log((1 + total) / (1 + df)) + 1.0 for term, df in frequency.items()}
    query_vector = _tfidf(_terms(query), idf)
    return [
        [
            _Sentence(span, count_tokens(text[span[0] : span[1]]), _cosine(_tfidf(c, idf), query_vector))
            for span, c in zip(s, per_hit, strict=True)
        ]
        for text, s, per_hit in zip(contents, spans, counts, strict=True)
    ]


def _choose(sentences: Sequence[_Sentence], budget: int) -> list[_Sentence]:
    """Best-scoring sentences first (ties: earlier), each taken if it still fits; returned in text order."""
    chosen: list[_Sentence] = []
    for sentence in sorted(sentences, key=lambda s: -s.score):
        if sentence.tokens <= budget:
            chosen.append(sentence)
            budget -= sentence.tokens
    return sorted(chosen, key=lambda s: s.span)


def _join(text: str, chosen: Sequence[_Sentence]) -> str:
    """Adjacent sentences keep the text between them; a gap where sentences were dropped becomes a newline."""
    parts: list[str] = []
    for previous, sentence in zip([None, *chosen], chosen, strict=False):
        if previous is not None:
            between = text[previous.span[1] : sentence.span[0]]
            parts.append(between if not between.strip() else "\n")
        parts.append(text[sentence.span[0] : sentence.span[1]])
    return "".join(parts)


def _truncate(text: str, sentence: _Sentence, budget: int) -> str:
    return " ".join(text[sentence.span[0] : sentence.span[1]].split()[:budget])


class TfidfCompressor(Compressor):
    """Fills the budget hit by hit in rank order, each with its best matching sentences (in text order).

    A hit none of whose sentences fits ends the list (a hit without content costs nothing). The top hit
    is never dropped: when even its best sentence exceeds the budget, that sentence is cut to the
    budget's first words.
    """

    def compress(self, query: Query, hits: Sequence[Candidate], token_budget: int) -> list[Candidate]:
        if not hits:
            return []
        scored = score_sentences(query.text or "", [h.content for h in hits])
        budget = max(token_budget, 1)
        kept: list[Candidate] = []
        for hit, sentences in zip(hits, scored, strict=True):
            chosen = _choose(sentences, budget)
            if not sentences:
                kept.append(hit)  # nothing to trim (a backend that returns no content) and no cost
                continue
            if not chosen:
                if not kept:
                    best = max(sentences, key=lambda s: s.score)
                    kept.append(replace(hit, content=_truncate(hit.content, best, budget)))
                break
            budget -= sum(s.tokens for s in chosen)
            kept.append(replace(hit, content=_join(hit.content, chosen)))
        return kept
