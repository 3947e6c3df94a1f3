"""Value types of the stage pipeline: planned queries, hits on their way out, and the trace."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from knowledge.pipeline.fusers.base import FusedHit
from knowledge.pipeline.llm import TokenBudget
from knowledge.pipeline.types import Candidate, Query
from retrieval_backends.types import SearchScope


@dataclass(frozen=True)
class QueryFilters:
    """Filters a planned query may add; they only ever narrow the caller's scope."""

    connector_ids: tuple[int, ...] | None = None
    environment: str | None = None  # an environment slug of the caller's tenant


@dataclass(frozen=True)
class PlannedQuery:
    text: str
    weight: float = 1.0
    reason: str = ""
    filters: QueryFilters = field(default_factory=QueryFilters)
    origin: str = "caller"


@dataclass(frozen=True)
class StageHit(Candidate):
    """A merged hit: its lane data, the planned queries that found it, and what stages attached."""

    fused: FusedHit | None = field(default=None, compare=False)
    matched_queries: tuple[int, ...] = ()
    parent_content: str | None = None
    excerpts: tuple[str, ...] = ()  # compress: quote-safe passages, each an exact substring of the chunk


@dataclass
class StageContext:
    """What a stage may read: the caller's question and scope, the result size, the LLM budget."""

    query: Query
    scope: SearchScope
    limit: int
    budget: TokenBudget
    warnings: list[str] = field(default_factory=list)
    # What a planner may choose from: (id, name) of the caller's connectors, its environments' slugs.
    choices: dict[str, Any] = field(default_factory=dict)


@dataclass
class StageTrace:
    """One stage's record. Content previews show only hits the caller may see."""

    name: str
    kind: str
    phase: str
    status: str = "success"  # success, error or skipped
    queries_in: int = 0
    queries_out: int = 0
    hits_in: int = 0
    hits_out: int = 0
    duration_ms: float = 0.0
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    preview: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "phase": self.phase,
            "status": self.status,
            "queries": {"in": self.queries_in, "out": self.queries_out},
            "hits": {"in": self.hits_in, "out": self.hits_out},
            "duration_ms": round(self.duration_ms, 2),
            "warnings": list(self.warnings),
            "error": self.error,
            "preview": self.preview,
        }
