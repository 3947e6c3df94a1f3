"""Per-query comparison of two runs: deltas, counts, the printed lines and the dropped-query rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowledge.evals.compare import (
    Earlier,
    compare,
    failure_rows,
    format_comparison,
    load_earlier,
    write_jsonl,
)
from knowledge.evals.datasets import Dataset
from knowledge.evals.runner import ConfigResult

METRIC = "ndcg@10"


def result(name: str, scores: dict[str, float], ranked: dict[str, list[str]] | None = None) -> ConfigResult:
    per_query = {q: {METRIC: v, "recall@10": 1.0} for q, v in scores.items()}
    return ConfigResult(name, {}, len(scores), 1.0, per_query, ranked=ranked or {})


EARLIER = Earlier(
    "toy",
    "test",
    "hashing",
    {
        "hybrid": {"q1": {METRIC: 0.5}, "q2": {METRIC: 1.0}, "q3": {METRIC: 0.25}, "q4": {METRIC: 0.7}},
        "vector": {"q1": {METRIC: 0.1}},
    },
)
DATASET = Dataset(
    "toy",
    Path("."),
    "test",
    {"q1": "first query", "q2": "second query", "q3": "third", "q4": "fourth", "q5": "fifth"},
    {"q1": {"d1": 2}, "q2": {"d2": 1, "d3": 2, "d9": 0}, "q3": {"d4": 1}, "q4": {"d5": 1}, "q5": {"d6": 1}},
)


def test_deltas_and_counts_per_configuration() -> None:
    now = result("hybrid", {"q1": 0.75, "q2": 0.5, "q3": 0.25, "q4": 0.70004, "q5": 1.0})
    (comparison,) = compare(EARLIER, [now, result("keyword", {"q1": 1.0})], METRIC)
    assert comparison.config == "hybrid" and comparison.new_queries == 1  # q5 was not judged earlier
    assert [(d.query_id, d.delta) for d in comparison.deltas] == [
        ("q1", 0.25),
        ("q2", -0.5),
        ("q3", 0.0),
        ("q4", pytest.approx(0.00004)),
    ]
    assert [d.query_id for d in comparison.improved] == ["q1"]  # q4 moved by rounding only
    assert [d.query_id for d in comparison.worsened] == ["q2"]
    assert comparison.mean_delta == pytest.approx((0.25 - 0.5 + 0.00004) / 4)


def test_printed_lines_put_the_worst_drop_first_then_the_counts() -> None:
    now = result("hybrid", {"q1": 0.75, "q2": 0.5, "q3": 0.25, "q4": 0.7, "q5": 1.0})
    lines = format_comparison(compare(EARLIER, [now], METRIC)[0], DATASET.queries)
    assert lines[0] == "hybrid (ndcg@10 per query, earlier → now):"
    assert lines[1] == "  -0.5000  1.0000 → 0.5000  q2  second query"
    assert lines[2] == "  +0.2500  0.5000 → 0.7500  q1  first query"
    assert lines[3] == (
        "  hybrid: 1 improved, 1 worsened, 2 unchanged; mean delta -0.0625; 1 queries not in the earlier run"
    )


def test_failure_rows_hold_the_query_what_was_expected_and_what_came_back(tmp_path: Path) -> None:
    ranked = {"q2": ["d9", "d2", "d7", "d8"], "q1": ["d1"]}
    now = result("hybrid", {"q1": 0.75, "q2": 0.5, "q3": 0.0, "q4": 0.7}, ranked)
    comparisons = compare(EARLIER, [now], METRIC)
    rows = failure_rows(comparisons, [now], DATASET, {"d2": "Two", "d3": "Three"}, k=3)
    assert [(r["query_id"], r["delta"]) for r in rows] == [("q2", -0.5), ("q3", -0.25)]
    assert rows[0] == {
        "config": "hybrid",
        "query_id": "q2",
        "query": "second query",
        "metric": METRIC,
        "before": 1.0,
        "after": 0.5,
        "delta": -0.5,
        "expected": [{"id": "d3", "grade": 2, "title": "Three"}, {"id": "d2", "grade": 1, "title": "Two"}],
        "got": [
            {"id": "d9", "grade": 0, "title": ""},
            {"id": "d2", "grade": 1, "title": "Two"},
            {"id": "d7", "grade": None, "title": ""},
        ],
    }
    assert rows[1]["got"] == []  # the run kept no ranking for q3
    path = tmp_path / "out" / "failures.jsonl"
    write_jsonl(path, rows)
    assert [json.loads(line) for line in path.read_text().splitlines()] == rows


def test_load_earlier_reads_reports_and_refuses_files_without_per_query(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"dataset": "toy", "split": "test", "per_query": EARLIER.per_query}))
    loaded = load_earlier(report)
    assert (loaded.dataset, loaded.split, loaded.embedder) == ("toy", "test", None)
    assert loaded.per_query == EARLIER.per_query
    report.write_text(json.dumps({"dataset": "toy", "configs": {}}))
    with pytest.raises(ValueError, match="no per-query scores"):
        load_earlier(report)
    report.write_text("{not json")
    with pytest.raises(ValueError, match="cannot read"):
        load_earlier(report)
