"""Committed baseline metrics: compare a run against them (with a tolerance) and rewrite them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowledge.evals.datasets import write_json
from knowledge.evals.report import RunInfo, chart_metrics
from knowledge.evals.runner import ConfigResult


@dataclass(frozen=True)
class Drop:
    config: str
    metric: str
    baseline: float
    current: float

    def __str__(self) -> str:
        return f"{self.config} {self.metric}: {self.current:.4f} < baseline {self.baseline:.4f}"


def baseline_payload(info: RunInfo, results: Sequence[ConfigResult]) -> dict[str, Any]:
    """Only what should be stable run to run: throughput is left out. Each query's nDCG (at the cut-off
    nearest 10) is kept too, so that `--compare` can use a baseline."""
    ndcg = chart_metrics(info.metrics)[0]
    return {
        "dataset": info.dataset,
        "split": info.split,
        "embedder": info.embedder,
        "chunker": info.chunker,
        "configs": {r.name: {m: round(v, 4) for m, v in r.metrics.items()} for r in results},
        "per_query": {
            r.name: {q: {ndcg: round(s[ndcg], 6)} for q, s in sorted(r.per_query.items())} for r in results
        },
    }


def write_baseline(path: Path, info: RunInfo, results: Sequence[ConfigResult]) -> None:
    write_json(path, baseline_payload(info, results))


def load_baseline(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read the baseline {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("configs"), dict):
        raise ValueError(f"{path}: expected a JSON object with a 'configs' mapping")
    return data


def mismatches(baseline: dict[str, Any], info: RunInfo) -> list[str]:
    """Why the run cannot be compared with the baseline (another dataset, embedder or chunker)."""
    current = {
        "dataset": info.dataset,
        "split": info.split,
        "embedder": info.embedder,
        "chunker": info.chunker,
    }
    return [
        f"the baseline was recorded with {key} {baseline[key]!r}, this run uses {value!r}"
        for key, value in current.items()
        if key in baseline and baseline[key] != value
    ]


def drops(baseline: dict[str, Any], results: Sequence[ConfigResult], tolerance: float) -> list[Drop]:
    """Every metric of a configuration that was run and is in the baseline, lower by more than `tolerance`."""
    found = []
    for result in results:
        for metric, expected in sorted(baseline["configs"].get(result.name, {}).items()):
            current = result.metrics.get(metric)
            if current is not None and current < float(expected) - tolerance:
                found.append(Drop(result.name, metric, float(expected), current))
    return found
