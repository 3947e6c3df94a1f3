"""Saved retrieval eval reports (`evals retrieval --json/--markdown`) in one folder, none outside it."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from knowledge.errors import NotFound
from knowledge.json_values import MAX_JSON_DEPTH, raw_json_depth

# A run is the files sharing one stem: <name>.json, <name>.md and the Markdown's chart <name>.png.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
SUFFIXES = (".json", ".md", ".png")
MAX_RUNS = 200
MAX_REPORT_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class EvalRun:
    name: str
    files: dict[str, Path]  # suffix -> file, every one inside the folder
    modified: datetime

    @property
    def chart(self) -> Path | None:
        return self.files.get(".png")


@dataclass(frozen=True)
class EvalReport:
    """What a run's reports say: a summary, the metrics table and any warnings (or why it is unreadable)."""

    run: EvalRun
    title: str
    summary: dict[str, str] = field(default_factory=dict)
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    problem: str = ""


def _inside(folder: Path, path: Path) -> bool:
    """A regular file whose real path (symlinks followed) is in the folder itself."""
    try:
        return path.is_file() and path.resolve().parent == folder.resolve()
    except OSError:
        return False


def eval_run_list(*, folder: Path) -> list[EvalRun]:
    """The runs in `folder` (not its subfolders), newest first; a chart alone is no run."""
    if not folder.is_dir():
        return []
    grouped: dict[str, dict[str, Path]] = {}
    for path in folder.iterdir():
        if path.suffix in SUFFIXES and NAME.fullmatch(path.stem) and _inside(folder, path):
            grouped.setdefault(path.stem, {})[path.suffix] = path
    runs = [
        EvalRun(name, files, datetime.fromtimestamp(max(p.stat().st_mtime for p in files.values()), UTC))
        for name, files in grouped.items()
        if ".json" in files or ".md" in files
    ]
    return sorted(runs, key=lambda r: (r.modified, r.name), reverse=True)[:MAX_RUNS]


def eval_run_get(*, folder: Path, name: str) -> EvalRun:
    """The run of that name; anything else (another folder, a traversal, a missing run) is NotFound."""
    if NAME.fullmatch(name):
        files = {s: folder / f"{name}{s}" for s in SUFFIXES}
        found = {s: p for s, p in files.items() if _inside(folder, p)}
        if ".json" in found or ".md" in found:
            return EvalRun(
                name, found, datetime.fromtimestamp(max(p.stat().st_mtime for p in found.values()), UTC)
            )
    raise NotFound(f"no eval report named {name!r}")


def _figure(value: Any, what: str, digits: int) -> str:
    """A metric as the table shows it; ValueError (the report is unreadable) for anything but a number."""
    if value is None:
        return "–"
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{what} is {json.dumps(value)[:40]}, not a number")
    return f"{value:.{digits}f}"


def _metrics(name: str, row: Any) -> dict[str, Any]:
    metrics = row.get("metrics", row) if isinstance(row, dict) else None
    if not isinstance(metrics, dict):
        raise ValueError(f"config {name!r} has no metrics mapping")
    return {m: v for m, v in metrics.items() if m not in ("warnings", "queries_per_second")}


def _warnings(configs: dict[str, Any]) -> list[str]:
    found = []
    for config, row in configs.items():
        listed = row.get("warnings", []) if isinstance(row, dict) else []
        found += [
            f"{config}: {w}" for w in (listed if isinstance(listed, list) else []) if isinstance(w, str)
        ]
    return found


def _from_json(run: EvalRun, data: Any) -> EvalReport:
    if not isinstance(data, dict) or not isinstance(data.get("configs"), dict):
        raise ValueError("expected a JSON object with a 'configs' mapping")
    configs: dict[str, Any] = data["configs"]
    metrics = {name: _metrics(name, row) for name, row in configs.items()}
    names = list(dict.fromkeys(m for row in metrics.values() for m in row))
    speed = any(isinstance(row, dict) and "queries_per_second" in row for row in configs.values())
    rows = [
        [config, *(_figure(metrics[config].get(m), f"{config} {m}", 4) for m in names)]
        + ([_figure(configs[config].get("queries_per_second"), f"{config} queries/s", 1)] if speed else [])
        for config in configs
    ]
    summary = {k: str(data[k]) for k in ("dataset", "split", "queries", "embedder", "chunker") if k in data}
    warnings = _warnings(configs)
    title = f"{summary.get('dataset', run.name)} ({summary.get('split', '?')})"
    return EvalReport(
        run, title, summary, ["config", *names, *(["queries/s"] if speed else [])], rows, warnings
    )


def _from_markdown(run: EvalRun, text: str) -> EvalReport:
    lines = text.splitlines()
    table = [line.strip().strip("|").split("|") for line in lines if line.strip().startswith("|")]
    title = next((line[2:].strip() for line in lines if line.startswith("# ")), run.name)
    intro = next((line for line in lines if line and line[0] not in "#|!"), "")
    if len(table) < 2:
        raise ValueError("no metrics table in the Markdown report")
    header, rows = [c.strip() for c in table[0]], [[c.strip() for c in row] for row in table[2:]]
    return EvalReport(run, title.removeprefix("Retrieval evaluation: "), {"about": intro}, header, rows)


def eval_report_get(*, folder: Path, name: str) -> EvalReport:
    """A run's metrics from its JSON report (or its Markdown one); an unreadable file says why."""
    run = eval_run_get(folder=folder, name=name)
    source = run.files.get(".json") or run.files[".md"]
    try:
        if source.stat().st_size > MAX_REPORT_BYTES:
            raise ValueError(f"larger than {MAX_REPORT_BYTES} bytes")
        text = source.read_text(encoding="utf-8")
        if source.suffix == ".json" and raw_json_depth(text) > MAX_JSON_DEPTH:
            raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep")
        return _from_json(run, json.loads(text)) if source.suffix == ".json" else _from_markdown(run, text)
    except (OSError, ValueError) as exc:
        return EvalReport(run, run.name, problem=f"cannot read {source.name}: {exc}")


def eval_runs_with_problems(*, folder: Path) -> list[tuple[EvalRun, str]]:
    """The runs of `eval_run_list`, each with why its report cannot be read ("" when it can)."""
    return [
        (run, eval_report_get(folder=folder, name=run.name).problem) for run in eval_run_list(folder=folder)
    ]
