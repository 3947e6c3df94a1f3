"""Value types of the stage pipeline: planned queries, hits on their way out, and the trace."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

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


class Warnings:
    """A search's warnings, in order; lanes add to them from their own threads."""

    def __init__(self, items: Sequence[str] = ()) -> None:
        self._items = list(items)
        self._lock = threading.Lock()

    def append(self, message: str) -> None:
        with self._lock:
            self._items.append(message)

    def extend(self, messages: Sequence[str]) -> None:
        with self._lock:
            self._items.extend(messages)

    def snapshot(self) -> list[str]:
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(self.snapshot())

    def __contains__(self, message: object) -> bool:
        return message in self.snapshot()

    def __eq__(self, other: object) -> bool:
        return self.snapshot() == (other.snapshot() if isinstance(other, Warnings) else other)

    def __repr__(self) -> str:
        return f"Warnings({self.snapshot()!r})"


class StageData(Protocol):
    """What stages may read of the canonical store, through the search engine (stages never import
    models, selectors or the backend registry). Every read is bounded by the hits it is asked about."""

    def chunk_vectors(
        self, chunk_ids: Sequence[int], dimensions: int, model: str | None
    ) -> dict[int, tuple[float, ...]]:
        """Stored vectors of these chunks with this dimension (and model); missing ones are absent."""

    def parent_indexes(self, hits: Sequence[FusedHit]) -> dict[int, int]:
        """chunk id -> parent chunk index, for the hits that are children."""

    def visible_chunk_texts(
        self, scope: SearchScope, keys: set[tuple[int, int]]
    ) -> Mapping[tuple[int, int], str]:
        """(document id, chunk index) -> text, for those of the keys visible in `scope`."""

    def document_values(self, document_ids: set[int], field_name: str) -> dict[int, Any]:
        """document id -> the value at `field_name` (`source_updated_at`, `updated_at`, or
        `metadata.<path>`), for the documents that have one (not None)."""


@dataclass
class StageContext:
    """What a stage may read: the caller's question and scope, the result size, the LLM budget, the
    search's warnings, and the canonical store through `data`."""

    query: Query
    scope: SearchScope
    limit: int
    budget: TokenBudget
    warnings: Warnings = field(default_factory=Warnings)
    # What a planner may choose from: (id, name) of the caller's connectors, its environments' slugs.
    choices: dict[str, Any] = field(default_factory=dict)
    data: StageData | None = None

    def store(self) -> StageData:
        """The data port; a StageError-free assertion for stages that need it."""
        assert self.data is not None, "this stage reads the store: the search engine passes `data`"
        return self.data


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
