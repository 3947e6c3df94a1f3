"""Fusers: RRF (k, weights), weighted min-max and theoretical, z-score and DBSF fusion, computed by hand."""

from __future__ import annotations

import pytest

from knowledge.pipeline.fusers.base import FusedHit
from knowledge.pipeline.fusers.dbsf import DBSFFuser
from knowledge.pipeline.fusers.rrf import RRFFuser
from knowledge.pipeline.fusers.scores import mean_and_stdev
from knowledge.pipeline.fusers.weighted import WeightedFuser, min_max
from knowledge.pipeline.fusers.zscore import ZScoreFuser
from knowledge.pipeline.registry import build
from retrieval_backends.types import LaneHit
from tests.plugins import plugin_options

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


def test_alpha_defaults_to_one_half_and_the_alias_takes_it_from_the_plugin_table(settings) -> None:  # type: ignore[no-untyped-def]
    assert WeightedFuser().alpha == 0.5
    plugin_options(settings, "fuser", "weighted", alpha=0.25)
    assert build("fuser", "weighted").alpha == 0.25
    assert WeightedFuser().alpha == 0.5  # a plugin built by hand reads no settings


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


def scored(fused: list[FusedHit]) -> list[tuple[int, float]]:
    return [(f.chunk_id, round(f.score, 6)) for f in fused]


def test_every_fusers_terms_add_up_to_its_scores() -> None:
    for fuser in (RRFFuser(k=60), WeightedFuser(), ZScoreFuser(), DBSFFuser()):
        for f in fuser.fuse(LANES):
            assert sum(f.terms.values()) == pytest.approx(f.score), type(fuser).__name__


def test_rrf_scores_with_k_and_weights() -> None:
    fused = RRFFuser(k=60).fuse(LANES, weights={"vector": 2.0})
    scores = {f.chunk_id: f.score for f in fused}
    assert {f.chunk_id: f.terms for f in fused}[D] == {"keyword": pytest.approx(1 / 62)}
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


def test_theoretical_normalisation_starts_cosine_at_minus_one_and_bm25_at_zero() -> None:
    fused = WeightedFuser(alpha=0.5, normalization="theoretical").fuse(LANES)
    # vector (s + 1) / 1.9: A 1, B 1.5/1.9, C 1.1/1.9; keyword s / 10: B 1, D 0.4, A 0.2
    assert scored(fused) == [(B, 0.894737), (A, 0.6), (C, 0.289474), (D, 0.2)]
    other = WeightedFuser(normalization="theoretical", minima={"vector": 0.0}).fuse(LANES)
    # vector s / 0.9; keyword has no stated minimum, so min-max: B 1, D 0.25, A 0
    assert scored(other) == [(B, 0.777778), (A, 0.5), (D, 0.125), (C, 0.055556)]


def test_weighted_rejects_an_unknown_normalization() -> None:
    with pytest.raises(ValueError, match="normalization must be one of minmax, theoretical"):
        WeightedFuser(normalization="softmax")


# Lanes with round z-scores: vector mean 0.5, sample σ 0.4; keyword mean 6, σ 3. Both: 1, 0, −1.
Z_LANES = {
    "vector": [hit(A, 0.9), hit(B, 0.5), hit(C, 0.1)],
    "keyword": [hit(B, 9.0), hit(D, 6.0), hit(A, 3.0)],
}


def test_zscore_missing_counts_as_the_lanes_lowest_z() -> None:
    fused = ZScoreFuser(alpha=0.5).fuse(Z_LANES)
    # A 0.5·1 + 0.5·(−1); B 0 + 0.5·1; C −0.5 + 0.5·(−1, missing); D 0.5·(−1, missing) + 0
    assert scored(fused) == [(B, 0.5), (A, 0.0), (D, -0.5), (C, -1.0)]
    assert {f.chunk_id: f.terms for f in fused}[D] == {"vector": -0.5, "keyword": 0.0}
    assert scored(ZScoreFuser(alpha=0.8).fuse(Z_LANES)) == [(A, 0.6), (B, 0.2), (D, -0.8), (C, -1.0)]


def test_zscore_missing_as_the_mean_adds_nothing() -> None:
    fused = ZScoreFuser(alpha=0.8, missing="mean").fuse(Z_LANES)
    # C −0.8 + 0 (missing); D 0 (missing) + 0.2·0
    assert scored(fused) == [(A, 0.6), (B, 0.2), (D, 0.0), (C, -0.8)]


def test_zscore_lane_of_one_hit_or_equal_scores_adds_nothing() -> None:
    one = ZScoreFuser(alpha=0.5).fuse({"vector": Z_LANES["vector"], "keyword": [hit(D, 3.0)]})
    # only the vector lane ranks: A 0.5, B 0, C −0.5; D is missing there (−1 · 0.5)
    assert scored(one) == [(A, 0.5), (B, 0.0), (C, -0.5), (D, -0.5)]
    flat = ZScoreFuser().fuse({"vector": [hit(A, 0.3), hit(B, 0.3), hit(A, 0.9)], "keyword": []})
    assert scored(flat) == [(A, 0.0), (B, 0.0)] and flat[0].ranks == {"vector": 1}


def test_zscore_explicit_weights_and_bad_options() -> None:
    assert scored(ZScoreFuser().fuse(Z_LANES, weights={"keyword": 2.0}))[:2] == [(B, 2.0), (D, 0.0)]
    assert ZScoreFuser().fuse({}) == []
    with pytest.raises(ValueError, match="missing must be one of min, mean"):
        ZScoreFuser(missing="zero")
    with pytest.raises(ValueError, match="alpha"):
        ZScoreFuser(alpha=-0.1)


def test_dbsf_maps_mean_plus_minus_three_sigma_to_the_unit_interval() -> None:
    fused = DBSFFuser(alpha=0.5).fuse(Z_LANES)
    # vector (s + 0.7) / 2.4: A 2/3, B 1/2, C 1/3; keyword (s + 3) / 18: B 2/3, D 1/2, A 1/3
    assert scored(fused) == [(B, 0.583333), (A, 0.5), (D, 0.25), (C, 0.166667)]
    single = DBSFFuser(alpha=0.5).fuse({"vector": [hit(A, 0.9)], "keyword": [hit(B, 0.2), hit(C, 0.2)]})
    assert scored(single) == [(A, 0.25), (B, 0.25), (C, 0.25)]


def test_mean_and_sample_standard_deviation() -> None:
    assert mean_and_stdev([9.0, 6.0, 3.0]) == (6.0, 3.0)
    assert mean_and_stdev([2.0]) == (2.0, 0.0) and mean_and_stdev([]) == (0.0, 0.0)
