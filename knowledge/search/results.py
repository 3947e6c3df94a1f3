"""What a search returns (hits with their citations and fusion inputs) and what a caller may swap."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from knowledge.pipeline.compressors.base import Compressor
from knowledge.pipeline.fusers.base import Fuser
from knowledge.pipeline.rerankers.base import Reranker
from knowledge.pipeline.stages.types import PlannedQuery


@dataclass(frozen=True)
class SearchHit:
    """One result with citation fields from PostgreSQL and the fusion inputs that ranked it."""

    chunk_id: int
    document_id: int
    chunk_index: int
    tenant_id: int | None
    title: str
    content: str
    source_url: str
    rrf_score: float
    similarity: float | None
    text_rank: float | None
    lane_ranks: dict[str, int]
    fusion_terms: dict[str, float] = field(default_factory=dict)  # each lane's share of rrf_score
    page: int | None = None
    parent_content: str | None = None
    excerpts: tuple[str, ...] = ()
    matched_queries: tuple[int, ...] = ()
    document_external_id: str | None = None  # None: not read with the hit (ask the documents)


@dataclass
class SearchResult:
    hits: list[SearchHit]
    warnings: list[str] = field(default_factory=list)
    lanes: dict[str, int] = field(default_factory=dict)
    trace: list[dict[str, Any]] | None = None
    queries: list[PlannedQuery] = field(default_factory=list)


@dataclass(frozen=True)
class Stages:
    """Overrides of the configured layers (the evals use them); None means the configured one."""

    fuser: Fuser | None = None
    reranker: Reranker | None = None
    compressor: Compressor | None = None
    token_budget: int | None = None
