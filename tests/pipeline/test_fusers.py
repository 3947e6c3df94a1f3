"""Fusers: RRF (k, weights) and weighted min-max fusion, computed by hand."""

from __future__ import annotations

import pytest

from knowledge.pipeline.fusers.rrf import RRFFuser
from knowledge.pipeline.fusers.weighted import WeightedFuser, min_max
from retrieval_backends.types import LaneHit

A, B, C, D = 1, 2, 3, 4


def hit(chunk_id: int, score: float, content: str = "") -> LaneHit:
    return LaneHit(chunk_id=chunk_id, document_id=10, chunk_index=chunk_id, score=score, content=content)


LANES = {
    "vector": [hit(A, 0.9), hit(B, 0.5, "from vector"), hit(C, 0.1)],
    "keyword": [hit(B, 10.0, "from keyword"), hit(D, 4.0), hit(A, 2.0)],
}


def test_weighted_fusion_with_the_default_alpha() -> None:
    fused = WeightedFuser(alpha=0.5).fuse(LANES)
    # vector normalised: A 1, B 0.5, C 0; keyword normalised: B 1, D 0.25, A 0
    assert [(f.chunk_id, f.score) for f in fused] == [
        (B, pytest.approx(0.75)),
        (A, pytest.approx(0.5)),
        (D, pytest.approx(0.125)),
        (C, pytest.approx(0.0)),
    ]
    by_id = {f.chunk_id: f for f in fused}
    assert by_id[B].ranks == {"vector": 2, "keyword": 1}
    assert by_id[B].scores == {"vector": 0.5, "keyword": 10.0}
    assert by_id[D].ranks == {"keyword": 2} and by_id[D].scores == {"keyword": 4.0}
    assert by_id[B].hit.content == "from vector"


def test_alpha_moves_the_balance_to_the_vector_lane() -> None:
    fused = WeightedFuser(alpha=0.8).fuse(LANES)
    assert [(f.chunk_id, round(f.score, 6)) for f in fused] == [(A, 0.8), (B, 0.6), (D, 0.05), (C, 0.0)]


def test_alpha_defaults_to_the_setting(settings) -> None:  # type: ignore[no-untyped-def]
    assert WeightedFuser().alpha == 0.5
    settings.KNOWLEDGE_FUSION_ALPHA = 0.25
    assert WeightedFuser().alpha == 0.25


def test_explicit_weights_replace_alpha() -> None:
    fused = WeightedFuser(alpha=0.5).fuse(LANES, weights={"keyword": 1.0})
    assert [f.chunk_id for f in fused][:2] == [B, D]
    assert {f.chunk_id: f.score for f in fused}[A] == 0.0


def test_a_lane_of_equal_scores_counts_fully_and_duplicates_are_ignored() -> None:
    fused = WeightedFuser(alpha=0.5).fuse({"vector": [hit(A, 0.3), hit(B, 0.3), hit(A, 0.9)]})
    assert [(f.chunk_id, f.score) for f in fused] == [(A, 0.5), (B, 0.5)]
    assert fused[0].ranks == {"vector": 1}


def test_weighted_rejects_alpha_outside_the_unit_interval() -> None:
    with pytest.raises(ValueError, match="alpha"):
        WeightedFuser(alpha=1.5)


def test_min_max() -> None:
    assert min_max({1: 2.0, 2: 4.0, 3: 3.0}) == {1: 0.0, 2: 1.0, 3: 0.5}
    assert min_max({}) == {}


def test_rrf_scores_with_k_and_weights() -> None:
    fused = RRFFuser(k=60).fuse(LANES, weights={"vector": 2.0})
    scores = {f.chunk_id: f.score for f in fused}
    assert scores[A] == pytest.approx(2 / 61 + 1 / 63)
    assert scores[B] == pytest.approx(2 / 62 + 1 / 61)
    assert scores[D] == pytest.approx(1 / 62)
    assert scores[C] == pytest.approx(2 / 63)
    assert [f.chunk_id for f in fused] == [A, B, C, D]  # 0.048662 > 0.048652


def test_rrf_ties_break_by_chunk_id_and_k_must_be_positive() -> None:
    fused = RRFFuser(k=1).fuse({"vector": [hit(D, 1.0)], "keyword": [hit(C, 1.0)]})
    assert [f.chunk_id for f in fused] == [C, D]
    with pytest.raises(ValueError):
        RRFFuser(k=0)
