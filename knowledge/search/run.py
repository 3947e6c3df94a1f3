"""One search's shared state: the executor its lanes and planned queries run on, its deadline, its
warnings (added to from lane threads, so guarded) and the trace of its stages."""

from __future__ import annotations

import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

from django.conf import settings

from knowledge.pipeline.stages.types import StageTrace, Warnings
from knowledge.search.executor import SearchExecutor, search_executor

T = TypeVar("T")


class DeadlinePassed(Exception):
    """The search's time budget ran out before this part of it finished."""


class SearchRun:
    def __init__(self, *, executor: SearchExecutor | None = None, deadline_ms: int | None = None) -> None:
        self.executor = executor or search_executor()
        budget = deadline_ms if deadline_ms is not None else settings.KNOWLEDGE_SEARCH_DEADLINE_MS
        self.started = time.monotonic()
        self.deadline = self.started + budget / 1000
        self.warnings = Warnings()
        self.traces: list[StageTrace] = []

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def wait(self, future: Future[T]) -> T:
        """The future's result, or DeadlinePassed when the search's budget runs out first."""
        try:
            return future.result(timeout=self.remaining())
        except FutureTimeout:
            raise DeadlinePassed from None

    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.started) * 1000
