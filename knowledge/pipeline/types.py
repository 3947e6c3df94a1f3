"""Value types shared by the query-time pipeline layers (fuser output, rerankers, compressors)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Query:
    """What the caller asked: the text and/or the query vector (with the model that made it)."""

    text: str | None
    embedding: tuple[float, ...] | None = None
    model: str | None = None


@dataclass(frozen=True)
class Candidate:
    """A fused hit on its way to the caller; `payload` carries the caller's own hit object."""

    chunk_id: int
    document_id: int
    chunk_index: int
    content: str
    score: float
    embedding: tuple[float, ...] | None = None
    payload: Any = field(default=None, compare=False)
