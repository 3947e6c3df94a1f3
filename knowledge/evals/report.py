"""Renders evaluation results: a plain-text table, a JSON report, and Markdown with a PNG bar chart."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowledge.evals.metrics import MetricSet
from knowledge.evals.runner import ConfigResult


@dataclass(frozen=True)
class RunInfo:
    """What was evaluated, with which pipeline."""

    dataset: str
    split: str
    queries: int
    embedder: str
    chunker: str
    metrics: MetricSet


def _rows(results: Sequence[ConfigResult], metrics: MetricSet) -> tuple[list[str], list[list[str]]]:
    header = ["config", *metrics.names(), "queries/s", "p50 ms", "p95 ms"]
    rows = [
        [
            r.name,
            *(f"{r.metrics[m]:.4f}" for m in metrics.names()),
            f"{r.queries_per_second:.1f}",
            f"{r.p50_ms:.1f}",
            f"{r.p95_ms:.1f}",
        ]
        for r in results
    ]
    return header, rows


def text_table(results: Sequence[ConfigResult], metrics: MetricSet) -> str:
    header, rows = _rows(results, metrics)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    overheads = [
        f"  {r.name}: " + ", ".join(f"{stage} {ms:.2f}" for stage, ms in r.stage_ms.items())
        for r in results
        if r.stage_ms
    ]
    if overheads:
        lines += ["", "stage overhead (ms per query):", *overheads]
    return "\n".join(lines)


def json_report(info: RunInfo, results: Sequence[ConfigResult], per_query: bool = True) -> dict[str, Any]:
    report: dict[str, Any] = {
        "dataset": info.dataset,
        "split": info.split,
        "queries": info.queries,
        "embedder": info.embedder,
        "chunker": info.chunker,
        "ks": list(info.metrics.ks),
        "configs": {
            r.name: {
                "metrics": {name: round(value, 6) for name, value in r.metrics.items()},
                "queries_per_second": round(r.queries_per_second, 2),
                "query_ms": {"p50": round(r.p50_ms, 2), "p95": round(r.p95_ms, 2)},
                "warnings": r.warnings,
                "stage_ms": {name: round(ms, 3) for name, ms in r.stage_ms.items()},
            }
            for r in results
        },
    }
    if per_query:
        report["per_query"] = {r.name: r.per_query for r in results}
    return report


@dataclass(frozen=True)
class ModelRun:
    """One embedder's run in a model comparison: its ingest rate and its configurations' results."""

    spec: str
    model: str
    dimension: int
    documents_per_second: float
    chunks_per_second: float
    results: Sequence[ConfigResult]


def models_table(runs: Sequence[ModelRun], metrics: MetricSet) -> str:
    """One row per embedder: ingest rate, then each configuration's nDCG@10 and p50/p95 query ms."""
    metric = chart_metrics(metrics)[0]
    names = [r.name for r in runs[0].results]
    lanes = [f"{n} {metric} (p50/p95 ms)" for n in names]
    header = ["embedder", "model", "dim", "docs/s", "chunks/s", *lanes]
    rows = [
        [
            run.spec,
            run.model,
            str(run.dimension),
            f"{run.documents_per_second:.1f}",
            f"{run.chunks_per_second:.1f}",
            *(f"{r.metrics[metric]:.4f} ({r.p50_ms:.1f}/{r.p95_ms:.1f})" for r in run.results),
        ]
        for run in runs
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def models_report(runs: Sequence[ModelRun]) -> list[dict[str, Any]]:
    return [
        {
            "embedder": run.spec,
            "model": run.model,
            "dimension": run.dimension,
            "documents_per_second": round(run.documents_per_second, 2),
            "chunks_per_second": round(run.chunks_per_second, 2),
            "configs": {
                r.name: {
                    "metrics": {name: round(value, 6) for name, value in r.metrics.items()},
                    "query_ms": {"p50": round(r.p50_ms, 2), "p95": round(r.p95_ms, 2)},
                }
                for r in run.results
            },
        }
        for run in runs
    ]


def chart_metrics(metrics: MetricSet) -> tuple[str, str]:
    """nDCG@10 and Recall@100, or the nearest cut-offs that were computed."""
    ndcg_k = min(metrics.ks, key=lambda k: (abs(k - 10), k))
    recall_k = 100 if 100 in metrics.ks else max(metrics.ks)
    return f"ndcg@{ndcg_k}", f"recall@{recall_k}"


def bar_chart(results: Sequence[ConfigResult], metrics: MetricSet, path: Path) -> None:
    """Grouped bars of the chart metrics per configuration (matplotlib, headless Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    names = chart_metrics(metrics)
    width = 0.38
    figure, axes = plt.subplots(figsize=(max(6.0, 1.3 * len(results)), 4.0))
    for offset, metric in enumerate(names):
        positions = [i + (offset - 0.5) * width for i in range(len(results))]
        bars = axes.bar(positions, [r.metrics[metric] for r in results], width, label=metric)
        axes.bar_label(bars, fmt="%.3f", fontsize=7)
    axes.set_xticks(range(len(results)), [r.name for r in results])
    axes.set_ylim(0, 1.1)
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, frameon=False)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def markdown_report(info: RunInfo, results: Sequence[ConfigResult], path: Path) -> Path:
    """Write the Markdown report and its chart (`<name>.png` next to it, linked relatively)."""
    chart = path.with_suffix(".png")
    bar_chart(results, info.metrics, chart)
    header, rows = _rows(results, info.metrics)
    lines = [
        f"# Retrieval evaluation: {info.dataset} ({info.split})",
        "",
        f"{info.queries} judged queries; embedder `{info.embedder}`, chunker `{info.chunker}`. "
        "nDCG uses linear gain (trec_eval `ndcg_cut`); queries without relevant documents are skipped.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        f"![{' and '.join(chart_metrics(info.metrics))} per configuration]"
        f"({os.path.relpath(chart, path.parent)})",
        "",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")
    return chart
