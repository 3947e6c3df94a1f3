"""Our metrics agree with ranx (an established implementation following trec_eval) on random runs."""

from __future__ import annotations

import random

import pytest

from knowledge.evals.metrics import MetricSet, evaluate, judged_queries

ranx = pytest.importorskip("ranx")


def random_case(seed: int) -> tuple[dict[str, list[str]], dict[str, dict[str, int]]]:
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(60)]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, list[str]] = {}
    for q in range(25):
        judged = rng.sample(docs, rng.randint(1, 12))
        qrels[f"q{q}"] = {d: rng.choice([0, 1, 1, 2]) for d in judged}
        if rng.random() < 0.9:  # some judged queries retrieve nothing
            run[f"q{q}"] = rng.sample(docs, rng.randint(1, 40))
    return run, qrels


@pytest.mark.parametrize("seed", range(8))
def test_metrics_match_ranx(seed: int) -> None:
    run, qrels = random_case(seed)
    metrics = MetricSet(ks=(1, 3, 5, 10, 20, 100))
    ours = evaluate(run, qrels, metrics)
    # ranx averages over every qrels query (0 for those without relevant documents); trec_eval and we skip
    # them, so only judged queries go in. Strictly decreasing scores keep our ranking (no tie-breaking).
    judged = judged_queries(qrels)
    ranx_qrels = ranx.Qrels({q: qrels[q] for q in judged})
    ranx_run = ranx.Run(
        {
            q: {d: float(len(run.get(q, [])) - i) for i, d in enumerate(run.get(q, []))} or {"none": 1.0}
            for q in judged
        }
    )
    names = metrics.names()
    theirs = ranx.evaluate(ranx_qrels, ranx_run, names, make_comparable=True)
    for name in names:
        assert ours[name] == pytest.approx(float(theirs[name]), abs=1e-9), name


def test_ranx_ndcg_is_the_linear_gain_variant() -> None:
    qrels = ranx.Qrels({"q": {"a": 2, "b": 1}})
    run = ranx.Run({"q": {"b": 2.0, "a": 1.0}})
    ours = evaluate({"q": ["b", "a"]}, {"q": {"a": 2, "b": 1}}, MetricSet(ks=(2,)))["ndcg@2"]
    assert ours == pytest.approx(float(ranx.evaluate(qrels, run, "ndcg@2")))
    assert ours != pytest.approx(float(ranx.evaluate(qrels, run, "ndcg_burges@2")))
