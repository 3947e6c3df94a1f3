"""Maximal Marginal Relevance: trade relevance against redundancy with what is already picked."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

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
    """Greedy MMR: pick argmax λ·relevance − (1−λ)·max cosine to the chunks already picked.

    Relevance is the min-max normalised fused score, so every lane that ranked a chunk counts (a
    query-to-chunk cosine alone would throw the keyword lane away); redundancy is the cosine between
    chunk vectors. Only candidates with a vector are reordered: one without a vector cannot be
    compared, so it keeps its fused position (slot) and MMR fills the other slots. Ties go to the
    better fused rank.
    """

    needs_embeddings = True

    def __init__(self, lambda_: float | None = None) -> None:
        lambda_ = DEFAULT_LAMBDA if lambda_ is None else float(lambda_)
        if not 0.0 <= lambda_ <= 1.0:
            raise ValueError(f"MMR lambda must lie in [0, 1], got {lambda_}")
        self.lambda_ = lambda_

    def rerank(self, query: Query, hits: Sequence[Candidate], limit: int) -> list[Candidate]:
        pool = list(hits)
        slots = sum(1 for h in pool[: max(limit, 0)] if h.embedding is not None)
        ordered = iter(self._select(pool, slots))
        return [h if h.embedding is None else next(ordered) for h in pool[: max(limit, 0)]]

    def _select(self, pool: Sequence[Candidate], count: int) -> list[Candidate]:
        """The first `count` MMR picks among the candidates that have a vector, in pick order."""
        normalised = min_max(dict(enumerate(h.score for h in pool)))
        indexes = [i for i, h in enumerate(pool) if h.embedding is not None]
        if not indexes or count <= 0:
            return []
        vectors = _unit_rows([pool[i].embedding or () for i in indexes])
        similarity = vectors @ vectors.T
        relevance = self.lambda_ * np.array([normalised[i] for i in indexes])
        redundancy = np.zeros(len(indexes))
        available = np.ones(len(indexes), dtype=bool)
        picked: list[int] = []
        for _ in range(min(count, len(indexes))):
            scores = np.where(available, relevance - (1.0 - self.lambda_) * redundancy, -np.inf)
            best = int(np.argmax(scores))  # first maximum = better fused rank
            picked.append(best)
            available[best] = False
            redundancy = similarity[best] if len(picked) == 1 else np.maximum(redundancy, similarity[best])
        return [pool[indexes[i]] for i in picked]


def _unit_rows(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero); rows of another length than the first are zeroed."""
    width = len(vectors[0])
    matrix = np.array([v if len(v) == width else [0.0] * width for v in vectors], dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
