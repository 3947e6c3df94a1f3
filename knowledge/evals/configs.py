"""The retrieval configurations an evaluation compares: which lanes run, and which fuser and reranker."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from knowledge.pipeline.registry import build
from knowledge.selectors.search import Stages


@dataclass(frozen=True)
class EvalConfig:
    """One row of the report: lanes plus the fuser and reranker (by registry name) that rank them."""

    name: str
    lanes: tuple[str, ...]
    fuser: str = "rrf"
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


CONFIGS: dict[str, EvalConfig] = {
    c.name: c
    for c in (
        EvalConfig("keyword", ("keyword",)),
        EvalConfig("vector", ("vector",)),
        EvalConfig("hybrid", ("vector", "keyword")),
        EvalConfig("hybrid+mmr", ("vector", "keyword"), reranker="mmr"),
        EvalConfig("hybrid-weighted", ("vector", "keyword"), fuser="weighted", fuser_options={"alpha": 0.5}),
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
