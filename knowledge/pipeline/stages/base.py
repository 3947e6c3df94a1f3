"""The stage contract: a class with `name`, `phase` and `run()`; query stages before hit stages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from knowledge.pipeline.fusers.base import FusedHit
from knowledge.pipeline.stages.types import PlannedQuery, StageContext, StageHit

QUERY, HIT = "query", "hit"
# A search's fan-out: at most this many planned queries after any query stage, each running every
# lane (two), so one request runs at most 16 lane statements (x3 with an external index's refills).
MAX_PLANNED_QUERIES = 8


class StageError(Exception):
    """A stage could not do its work; the pipeline skips it with a warning unless it is `strict`."""


class Stage:
    """A pipeline stage. Options are keyword arguments; `strict=True` makes a failure fail the search."""

    name: ClassVar[str] = ""
    phase: ClassVar[str] = ""
    kind: ClassVar[str] = "local"  # or "llm"

    def __init__(self, *, strict: bool = False, **options: Any) -> None:
        self.strict = strict
        self.options = options

    def options_problem(self) -> str | None:
        """What is wrong with the options, found before any search runs (a request's stages: a 400)."""
        return None


class QueryStage(Stage):
    """Turns planned queries into planned queries (the first stage gets the caller's question)."""

    phase = QUERY

    def run(self, queries: Sequence[PlannedQuery], context: StageContext) -> list[PlannedQuery]:
        raise NotImplementedError("query stages must implement run(queries, context)")


class HitStage(Stage):
    """Turns merged hits into hits, best first; never adds a hit the caller may not see."""

    phase = HIT

    def run(self, hits: Sequence[StageHit], context: StageContext) -> list[StageHit]:
        raise NotImplementedError("hit stages must implement run(hits, context)")

    def reads_pool(self, fused: Sequence[FusedHit]) -> bool:
        """Whether the stage may reorder or drop these hits (the best 3 x limit, not yet read), and so
        gets them all with their text; when no stage does, only the answer's hits are read. Override
        only when sure: a stage that gets too few hits can return fewer than the limit."""
        return True


def order_problem(stages: Sequence[Stage]) -> str | None:
    """Why the order is invalid (a query stage after a hit stage), naming both; None when valid."""
    last_hit: Stage | None = None
    for stage in stages:
        if stage.phase == HIT:
            last_hit = stage
        elif stage.phase == QUERY and last_hit is not None:
            return (
                f"query stage {stage.name!r} comes after hit stage {last_hit.name!r}: query stages must "
                "come first (they plan the queries the hits come from)"
            )
    return None
