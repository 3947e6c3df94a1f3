"""The fuser contract."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from retrieval_backends.types import LaneHit


@dataclass(frozen=True)
class FusedHit:
    """A chunk with its fused score and, per lane, its 1-based rank, raw score and share of the fused
    score (`terms`, which add up to `score`; empty when a fuser does not report them)."""

    chunk_id: int
    score: float
    ranks: Mapping[str, int]
    scores: Mapping[str, float]
    hit: LaneHit
    terms: Mapping[str, float] = field(default_factory=dict)


class Fuser:
    """Combines lanes (name → hits in rank order) into one list, best first, ties by chunk id."""

    def fuse(
        self, lanes: Mapping[str, Sequence[LaneHit]], weights: Mapping[str, float] | None = None
    ) -> list[FusedHit]:
        raise NotImplementedError("fusers must implement fuse()")
