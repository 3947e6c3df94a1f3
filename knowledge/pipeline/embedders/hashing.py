"""Deterministic feature-hashing embedder: no model, no dependencies (CI and offline development)."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

from knowledge.pipeline.embedders.base import Embedder

TOKEN = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder(Embedder):
    """Signed feature hashing of lower-cased word unigrams and bigrams, L2-normalised."""

    def __init__(self, dimension: int = 384) -> None:
        if not isinstance(dimension, int) or dimension <= 0:
            raise ValueError(f"dimension must be a positive int, got {dimension!r}")
        self.dimension = dimension
        self.name = f"hashing-sha256-{dimension}"

    def _features(self, text: str) -> list[str]:
        words = TOKEN.findall(text.lower())
        return words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._embed_one(t) for t in texts]

    def _embed_one(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        for feature in self._features(text):
            digest = hashlib.sha256(feature.encode("utf-8")).digest()
            slot = int.from_bytes(digest[:4], "big") % self.dimension
            vector[slot] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0.0:
            vector[0] = 1.0
            return vector
        return [v / norm for v in vector]
