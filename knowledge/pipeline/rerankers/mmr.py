"""Maximal Marginal Relevance: trade relevance to the query against redundancy with what is already picked."""

from __future__ import annotations

import math
from collections.abc import Sequence

from django.conf import settings

from knowledge.pipeline.fusers.weighted import min_max
from knowledge.pipeline.rerankers.base import Reranker
from knowledge.pipeline.types import Candidate, Query

DEFAULT_LAMBDA = 0.7


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 when either vector is zero or the lengths differ."""
    if len(a) != len(b):
        return 0.0
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norms if norms else 0.0


class MMRReranker(Reranker):
    """Greedy MMR on chunk vectors: pick argmax λ·relevance − (1−λ)·max cosine to the picked ones.

    Relevance is cosine(query vector, chunk vector), or the min-max normalised fused score when the query
    has no vector. Only candidates with a vector are reordered: a candidate without one cannot be compared,
    so it keeps its fused position (slot) in the list and MMR fills the other slots. Ties go to the better
    fused rank.
    """

    needs_embeddings = True

    def __init__(self, lambda_: float | None = None) -> None:
        if lambda_ is None:
            lambda_ = float(getattr(settings, "KNOWLEDGE_MMR_LAMBDA", DEFAULT_LAMBDA))
        if not 0.0 <= lambda_ <= 1.0:
            raise ValueError(f"MMR lambda must lie in [0, 1], got {lambda_}")
        self.lambda_ = lambda_

    def rerank(self, query: Query, hits: Sequence[Candidate], limit: int) -> list[Candidate]:
        pool = list(hits)
        slots = sum(1 for h in pool[: max(limit, 0)] if h.embedding is not None)
        ordered = iter(self._select(query, pool, slots))
        return [h if h.embedding is None else next(ordered) for h in pool[: max(limit, 0)]]

    def _relevance(self, query: Query, pool: Sequence[Candidate]) -> list[float]:
        if query.embedding is not None:
            return [cosine(query.embedding, h.embedding) if h.embedding else 0.0 for h in pool]
        normalised = min_max(dict(enumerate(h.score for h in pool)))
        return [normalised[i] for i in range(len(pool))]

    def _select(self, query: Query, pool: Sequence[Candidate], count: int) -> list[Candidate]:
        """The first `count` MMR picks among the candidates that have a vector."""
        relevance = self._relevance(query, pool)
        vectors = {i: _unit(h.embedding) for i, h in enumerate(pool) if h.embedding is not None}
        redundancy: dict[int, float] = {}
        remaining = list(vectors)
        picked: list[Candidate] = []
        while remaining and len(picked) < count:
            best = max(remaining, key=lambda i: (self._score(relevance[i], redundancy.get(i)), -i))
            remaining.remove(best)
            picked.append(pool[best])
            for i in remaining:
                similarity = sum(x * y for x, y in zip(vectors[i], vectors[best], strict=False))
                redundancy[i] = max(redundancy.get(i, -math.inf), similarity)
        return picked

    def _score(self, relevance: float, redundancy: float | None) -> float:
        return self.lambda_ * relevance - (1.0 - self.lambda_) * (redundancy or 0.0)


def _unit(vector: Sequence[float]) -> tuple[float, ...]:
    norm = math.sqrt(sum(x * x for x in vector))
    return tuple(x / norm for x in vector) if norm else tuple(0.0 for _ in vector)
