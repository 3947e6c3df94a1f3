"""The pass-through reranker: keeps the fused order."""

from __future__ import annotations

from collections.abc import Sequence

from knowledge.pipeline.rerankers.base import Reranker
from knowledge.pipeline.types import Candidate, Query


class NoReranker(Reranker):
    def rerank(self, query: Query, hits: Sequence[Candidate], limit: int) -> list[Candidate]:
        return list(hits[:limit])
