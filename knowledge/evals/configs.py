"""The retrieval configurations an evaluation compares: which lanes run, and which fuser and reranker."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from knowledge.pipeline.registry import DEFAULTS, build
from knowledge.pipeline.stages.base import Stage
from knowledge.pipeline.stages.registry import request_stages
from knowledge.search import Stages


@dataclass(frozen=True)
class EvalConfig:
    """One row of the report: lanes plus the fuser and reranker (by registry name) that rank them; the
    fuser is the project's default one unless named."""

    name: str
    lanes: tuple[str, ...]
    fuser: str = DEFAULTS["fuser"]
    reranker: str = "none"
    fuser_options: dict[str, Any] = field(default_factory=dict)
    # A stage pipeline (names or {"name", "options"}, query stages first); None: the default tail.
    pipeline: tuple[Any, ...] | None = None

    def stage_list(self) -> list[Stage] | None:
        return None if self.pipeline is None else request_stages(list(self.pipeline))

    def stages(self) -> Stages:
        """Explicit stages, so a run does not depend on the configured fuser or reranker; no compression
        (it would drop hits and its budget is no ranking concern)."""
        return Stages(
            fuser=build("fuser", self.fuser, **self.fuser_options),
            reranker=build("reranker", self.reranker),
            compressor=build("compressor", "none"),
        )


HYBRID = ("vector", "keyword")
CONFIGS: dict[str, EvalConfig] = {
    c.name: c
    for c in (
        EvalConfig("keyword", ("keyword",)),
        EvalConfig("vector", ("vector",)),
        EvalConfig("hybrid", HYBRID),
        EvalConfig("hybrid+mmr", HYBRID, reranker="mmr"),
        # The other fusion candidates, each with its own constants (not the deployment's settings).
        EvalConfig("hybrid-rrf", HYBRID, fuser="rrf", fuser_options={"k": 60}),
        EvalConfig("hybrid-weighted", HYBRID, fuser="weighted", fuser_options={"alpha": 0.5}),
        EvalConfig(
            "hybrid-tm2c2",
            HYBRID,
            fuser="weighted",
            fuser_options={"alpha": 0.5, "normalization": "theoretical"},
        ),
        EvalConfig("hybrid-dbsf", HYBRID, fuser="dbsf", fuser_options={"alpha": 0.5}),
        EvalConfig(
            "hybrid-zscore-mean", HYBRID, fuser="zscore", fuser_options={"alpha": 0.5, "missing": "mean"}
        ),
        # Stage pipelines (no LLM stage: the evals run offline).
        EvalConfig("hybrid+diversify", HYBRID, pipeline=("diversify",)),
        EvalConfig("hybrid+compress", HYBRID, pipeline=("compress",)),
        EvalConfig("hybrid+decay", HYBRID, pipeline=("decay",)),
    )
}


def config_from_json(text: str) -> EvalConfig:
    """A configuration described in JSON: {"name", "lanes"?, "fuser"?, "fuser_options"?, "stages"?}."""
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not a JSON configuration: {exc}") from None
    allowed = {"name", "lanes", "fuser", "fuser_options", "stages"}
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or set(raw) - allowed:
        raise ValueError(
            f"a JSON configuration is an object with a name and any of {sorted(allowed - {'name'})}"
        )
    config = EvalConfig(
        raw["name"],
        tuple(raw.get("lanes", HYBRID)),
        fuser=raw.get("fuser", DEFAULTS["fuser"]),
        fuser_options=dict(raw.get("fuser_options", {})),
        pipeline=tuple(raw["stages"]) if "stages" in raw else None,
    )
    config.stage_list()  # refuse bad stages now, not mid-run
    return config


def select_configs(names: Sequence[str] | None) -> list[EvalConfig]:
    """The named configurations (or JSON-described ones) in the given order (all named ones by default)."""
    if not names:
        return [c for c in CONFIGS.values() if c.pipeline is None]
    chosen = []
    for name in dict.fromkeys(names):
        if name.lstrip().startswith("{"):
            chosen.append(config_from_json(name))
        elif name in CONFIGS:
            chosen.append(CONFIGS[name])
        else:
            raise ValueError(f"unknown configuration {name!r}; choose from {', '.join(CONFIGS)} or give JSON")
    return chosen
