"""The pass-through compressor: returns hits unchanged."""

from __future__ import annotations

from collections.abc import Sequence

from knowledge.pipeline.compressors.base import Compressor
from knowledge.pipeline.types import Candidate, Query


class NoCompressor(Compressor):
    def compress(self, query: Query, hits: Sequence[Candidate], token_budget: int) -> list[Candidate]:
        return list(hits)
