"""Per-query comparison with an earlier run: each query's nDCG delta, counts, and the queries that dropped."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowledge.evals.datasets import Dataset
from knowledge.evals.runner import ConfigResult

EPSILON = 1e-4  # smaller deltas are rounding (baselines keep 6 decimals), not a change


@dataclass(frozen=True)
class Earlier:
    """An earlier run's per-query scores (config → query → metric → value) and what it ran on."""

    dataset: str | None
    split: str | None
    embedder: str | None
    per_query: dict[str, dict[str, dict[str, float]]]


def load_earlier(path: Path) -> Earlier:
    """A JSON report (`--json`) or a baseline: both carry `per_query`; ValueError says what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from exc
    per_query = data.get("per_query") if isinstance(data, dict) else None
    if not isinstance(per_query, dict) or not all(isinstance(v, dict) for v in per_query.values()):
        raise ValueError(
            f"{path}: no per-query scores to compare with; pass a report written by --json or a baseline"
        )
    return Earlier(data.get("dataset"), data.get("split"), data.get("embedder"), per_query)


@dataclass(frozen=True)
class QueryDelta:
    query_id: str
    before: float
    after: float

    @property
    def delta(self) -> float:
        return self.after - self.before


@dataclass(frozen=True)
class Comparison:
    """One configuration, present in both runs, compared query by query on `metric`."""

    config: str
    metric: str
    deltas: list[QueryDelta]
    new_queries: int  # judged now, absent from the earlier run

    @property
    def improved(self) -> list[QueryDelta]:
        return [d for d in self.deltas if d.delta > EPSILON]

    @property
    def worsened(self) -> list[QueryDelta]:
        return [d for d in self.deltas if d.delta < -EPSILON]

    @property
    def mean_delta(self) -> float:
        return sum(d.delta for d in self.deltas) / len(self.deltas) if self.deltas else 0.0


def compare(earlier: Earlier, results: Sequence[ConfigResult], metric: str) -> list[Comparison]:
    """Every configuration of this run that the earlier run also has; queries in id order."""
    found = []
    for result in results:
        before = earlier.per_query.get(result.name)
        if before is None:
            continue
        deltas = [
            QueryDelta(qid, float(before[qid][metric]), scores[metric])
            for qid, scores in sorted(result.per_query.items())
            if metric in before.get(qid, {})
        ]
        found.append(Comparison(result.name, metric, deltas, len(result.per_query) - len(deltas)))
    return found


def format_comparison(comparison: Comparison, queries: Mapping[str, str]) -> list[str]:
    """The changed queries, worst drop first, then the counts."""
    lines = [f"{comparison.config} ({comparison.metric} per query, earlier → now):"]
    changed = sorted(comparison.improved + comparison.worsened, key=lambda d: (d.delta, d.query_id))
    for d in changed:
        text = queries.get(d.query_id, "")
        lines.append(f"  {d.delta:+.4f}  {d.before:.4f} → {d.after:.4f}  {d.query_id}  {text[:80]}")
    unchanged = len(comparison.deltas) - len(changed)
    summary = (
        f"  {comparison.config}: {len(comparison.improved)} improved, {len(comparison.worsened)} worsened, "
        f"{unchanged} unchanged; mean delta {round(comparison.mean_delta, 4) + 0.0:+.4f}"
    )
    if comparison.new_queries:
        summary += f"; {comparison.new_queries} queries not in the earlier run"
    return [*lines, summary]


def _documents(
    ids: Sequence[str], judged: Mapping[str, int], titles: Mapping[str, str]
) -> list[dict[str, Any]]:
    return [{"id": doc, "grade": judged.get(doc), "title": titles.get(doc, "")} for doc in ids]


def failure_rows(
    comparisons: Sequence[Comparison],
    results: Sequence[ConfigResult],
    dataset: Dataset,
    titles: Mapping[str, str],
    k: int,
) -> list[dict[str, Any]]:
    """One row per configuration and query that dropped: the query, what was expected, what came back.

    `expected` is the relevant documents, best grade first; `got` is the top `k` documents now (grade
    None when unjudged).
    """
    ranked = {r.name: r.ranked for r in results}
    rows = []
    for comparison in comparisons:
        for d in sorted(comparison.worsened, key=lambda d: (d.delta, d.query_id)):
            judged = dataset.qrels[d.query_id]
            relevant = sorted((doc for doc, g in judged.items() if g > 0), key=lambda x: (-judged[x], x))
            rows.append(
                {
                    "config": comparison.config,
                    "query_id": d.query_id,
                    "query": dataset.queries[d.query_id],
                    "metric": comparison.metric,
                    "before": round(d.before, 6),
                    "after": round(d.after, 6),
                    "delta": round(d.delta, 6),
                    "expected": _documents(relevant, judged, titles),
                    "got": _documents(ranked[comparison.config].get(d.query_id, [])[:k], judged, titles),
                }
            )
    return rows


def write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
