"""Hand-computed cases for Recall@k, MRR@k and nDCG@k (linear gain, trec_eval ndcg_cut conventions)."""

from __future__ import annotations

import math

import pytest

from knowledge.evals.metrics import (
    MetricSet,
    dedupe,
    evaluate,
    judged_queries,
    ndcg_at,
    rank_by_score,
    recall_at,
    reciprocal_rank_at,
)

GRADED = {"a": 2, "b": 1, "c": 0}


def log2(x: float) -> float:
    return math.log2(x)


def test_recall_counts_graded_documents_as_relevant_and_ignores_grade_zero() -> None:
    assert recall_at(["c", "a", "z"], GRADED, 1) == 0.0
    assert recall_at(["c", "a", "z"], GRADED, 2) == 0.5
    assert recall_at(["c", "a", "b"], GRADED, 3) == 1.0


def test_k_larger_than_the_result_list() -> None:
    assert recall_at(["a"], GRADED, 100) == 0.5
    assert ndcg_at(["a"], GRADED, 100) == pytest.approx(2 / (2 + 1 / log2(3)))
    assert reciprocal_rank_at(["z", "a"], GRADED, 100) == 0.5


def test_reciprocal_rank_stops_at_the_cutoff() -> None:
    ranked = [f"x{i}" for i in range(10)] + ["b"]
    assert reciprocal_rank_at(ranked, GRADED, 10) == 0.0
    assert reciprocal_rank_at(ranked, GRADED, 11) == pytest.approx(1 / 11)


def test_ndcg_uses_linear_gain_and_the_ideal_from_all_judged_documents() -> None:
    # DCG = 1/log2(2) + 2/log2(3); ideal = 2/log2(2) + 1/log2(3)
    assert ndcg_at(["b", "a"], GRADED, 2) == pytest.approx((1 + 2 / log2(3)) / (2 + 1 / log2(3)))
    # The ideal counts relevant documents that were never retrieved.
    assert ndcg_at(["a"], GRADED, 1) == 1.0
    assert ndcg_at(["z", "b"], GRADED, 2) == pytest.approx((1 / log2(3)) / (2 + 1 / log2(3)))
    assert ndcg_at(["c", "z"], GRADED, 2) == 0.0


def test_equal_grades_are_interchangeable_in_the_ideal_ranking() -> None:
    ties = {"a": 1, "b": 1, "c": 1}
    assert ndcg_at(["c", "a", "b"], ties, 3) == pytest.approx(1.0)
    assert ndcg_at(["c", "z", "b"], ties, 3) == pytest.approx(
        (1 + 1 / log2(4)) / (1 + 1 / log2(3) + 1 / log2(4))
    )


def test_score_ties_are_broken_by_id_and_duplicates_keep_their_first_position() -> None:
    assert rank_by_score({"b": 1.0, "a": 1.0, "c": 2.0}) == ["c", "a", "b"]
    assert dedupe(["d2", "d1", "d2", "d3", "d1"]) == ["d2", "d1", "d3"]


def test_queries_without_relevant_documents_are_skipped() -> None:
    qrels = {"q1": GRADED, "q2": {"c": 0}, "q3": {}}
    assert judged_queries(qrels) == ["q1"]
    scores = evaluate({"q1": ["a"], "q2": ["c"]}, qrels, MetricSet(ks=(1,)))
    assert scores == {"recall@1": 0.5, "mrr@10": 1.0, "ndcg@1": 1.0}


def test_a_judged_query_with_no_results_scores_zero_and_runs_are_deduplicated() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    scores = evaluate({"q1": ["a", "a", "b"]}, qrels, MetricSet(ks=(2,), mrr_k=2))
    assert scores == {"recall@2": 0.5, "mrr@2": 0.5, "ndcg@2": 0.5}


def test_metric_names_follow_the_cutoffs() -> None:
    assert MetricSet(ks=(1, 10)).names() == ["recall@1", "recall@10", "mrr@10", "ndcg@1", "ndcg@10"]
