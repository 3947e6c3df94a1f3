"""The reranker contract."""

from __future__ import annotations

from collections.abc import Sequence

from knowledge.pipeline.types import Candidate, Query


class Reranker:
    """Returns at most `limit` of `hits`, best first; never invents hits.

    Set `needs_embeddings = True` to receive each candidate's chunk vector in `Candidate.embedding`
    (and the query vector in `Query.embedding` when there is one).
    """

    needs_embeddings: bool = False

    def rerank(self, query: Query, hits: Sequence[Candidate], limit: int) -> list[Candidate]:
        raise NotImplementedError("rerankers must implement rerank()")
