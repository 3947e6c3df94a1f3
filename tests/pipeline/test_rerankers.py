"""Rerankers: MMR orders worked out by hand, vector-less candidates keep their slots; the pass-through."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from knowledge.pipeline.registry import build
from knowledge.pipeline.rerankers.base import Reranker
from knowledge.pipeline.rerankers.mmr import MMRReranker, cosine
from knowledge.pipeline.rerankers.none import NoReranker
from knowledge.pipeline.types import Candidate, Query
from knowledge.search import Stages, search_chunks
from knowledge.services.documents import document_upsert
from retrieval_backends.types import SearchScope
from tests.factories import ConnectorFactory
from tests.plugins import plugin_options

QUERY = Query(text="q", embedding=(1.0, 0.0, 0.0))
A_VEC = (0.8, 0.6, 0.0)
C_VEC = (0.6, 0.0, 0.8)  # cosine to A 0.48


def cand(chunk_id: int, score: float, embedding: tuple[float, ...] | None) -> Candidate:
    return Candidate(
        chunk_id=chunk_id, document_id=1, chunk_index=chunk_id, content="", score=score, embedding=embedding
    )


# Fused scores normalise to relevance A 1, B 0.875, C 0.85, N 0.
A, B, C, N = cand(1, 0.05, A_VEC), cand(2, 0.045, A_VEC), cand(4, 0.044, C_VEC), cand(3, 0.01, None)


def ids(hits: list[Candidate]) -> list[int]:
    return [h.chunk_id for h in hits]


def test_mmr_prefers_a_diverse_hit_over_a_duplicate() -> None:
    # step 1: A (0.7·1); step 2: B = 0.7·0.875 − 0.3·1.0 = 0.3125, C = 0.7·0.85 − 0.3·0.48 = 0.451, so C;
    # step 3: B. N has no vector and keeps its fused slot (fourth).
    assert ids(MMRReranker().rerank(QUERY, [A, B, C, N], limit=4)) == [1, 4, 2, 3]


def test_mmr_cuts_to_the_limit() -> None:
    reranker = MMRReranker()
    assert ids(reranker.rerank(QUERY, [A, B, C, N], limit=2)) == [1, 4]
    assert reranker.rerank(QUERY, [A, B, C, N], limit=0) == []


def test_vectorless_candidates_keep_their_slot() -> None:
    a, n, b, c = cand(1, 0.05, A_VEC), cand(3, 0.047, None), cand(2, 0.045, A_VEC), cand(4, 0.044, C_VEC)
    assert ids(MMRReranker().rerank(QUERY, [a, n, b, c], limit=4)) == [1, 3, 4, 2]


def test_mmr_with_lambda_one_is_the_fused_order() -> None:
    assert ids(MMRReranker(lambda_=1.0).rerank(QUERY, [A, B, C], limit=3)) == [1, 2, 4]


def test_relevance_is_the_fused_score_not_the_query_cosine() -> None:
    # C points along the query vector, yet A (better fused score, e.g. from the keyword lane) stays first.
    a, c = cand(1, 0.05, (0.0, 1.0, 0.0)), cand(4, 0.01, (1.0, 0.0, 0.0))
    assert ids(MMRReranker().rerank(QUERY, [a, c], limit=2)) == [1, 4]


def test_mmr_without_any_vectors_keeps_the_fused_order() -> None:
    hits = [cand(i, 1.0 / i, None) for i in (1, 2, 3)]
    assert MMRReranker().rerank(QUERY, hits, limit=2) == hits[:2]


def test_mmr_asks_for_embeddings_and_checks_lambda(settings) -> None:  # type: ignore[no-untyped-def]
    assert MMRReranker.needs_embeddings is True and MMRReranker().lambda_ == 0.7
    plugin_options(settings, "reranker", "mmr", lambda_=0.4)
    assert build("reranker", "mmr").lambda_ == 0.4
    with pytest.raises(ValueError, match="lambda"):
        MMRReranker(lambda_=-0.1)


def test_cosine() -> None:
    assert cosine(A_VEC, C_VEC) == pytest.approx(0.48)
    assert cosine((0.0, 0.0), (1.0, 0.0)) == 0.0
    assert cosine((1.0,), (1.0, 0.0)) == 0.0


def test_none_reranker_passes_through() -> None:
    reranker: Reranker = NoReranker()
    assert reranker.needs_embeddings is False
    assert reranker.rerank(QUERY, [C, A, B], limit=2) == [C, A]


class RecordingMMR(MMRReranker):
    seen: list[Candidate]
    query: Query

    def rerank(self, query: Query, hits: Sequence[Candidate], limit: int) -> list[Candidate]:
        self.seen, self.query = list(hits), query
        return super().rerank(query, hits, limit)


@pytest.mark.django_db
def test_search_hands_mmr_the_chunk_and_query_vectors() -> None:
    connector = ConnectorFactory.create()
    for key, text in {"a": "cats purr", "b": "cats purr loudly", "c": "dogs bark at cats"}.items():
        document_upsert(connector=connector, external_id=key, title=key, content=text, is_public=True)
    scope = SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))
    reranker = RecordingMMR()
    result = search_chunks(scope=scope, query_text="cats purr", limit=2, stages=Stages(reranker=reranker))
    assert len(result.hits) == 2 and len(reranker.seen) == 3
    assert reranker.query.embedding is not None and len(reranker.query.embedding) == 384
    assert all(c.embedding is not None and len(c.embedding) == 384 for c in reranker.seen)
