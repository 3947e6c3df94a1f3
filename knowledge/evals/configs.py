"""The retrieval configurations an evaluation compares: which lanes run, and which fuser and reranker."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from knowledge.pipeline.registry import DEFAULTS, build
from knowledge.selectors.search import Stages


@dataclass(frozen=True)
class EvalConfig:
    """One row of the report: lanes plus the fuser and reranker (by registry name) that rank them; the
    fuser is the project's default one unless named."""

    name: str
    lanes: tuple[str, ...]
    fuser: str = DEFAULTS["fuser"]
    reranker: str = "none"
    fuser_options: dict[str, Any] = field(default_factory=dict)

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
    )
}


def select_configs(names: Sequence[str] | None) -> list[EvalConfig]:
    """The named configurations in the given order (all of them when none are named)."""
    if not names:
        return list(CONFIGS.values())
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        raise ValueError(f"unknown configuration(s) {', '.join(unknown)}; choose from {', '.join(CONFIGS)}")
    return [CONFIGS[n] for n in dict.fromkeys(names)]
