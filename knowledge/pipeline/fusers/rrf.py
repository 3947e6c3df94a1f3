"""Reciprocal Rank Fusion: score = Σ weight / (k + rank) over the lanes a chunk appears in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from knowledge.pipeline.fusers.base import FusedHit, Fuser
from retrieval_backends.types import LaneHit

DEFAULT_K = 60  # the default of KNOWLEDGE_RRF_K, which reaches here as an option


class RRFFuser(Fuser):
    def __init__(self, k: int | None = None) -> None:
        k = k if k is not None else DEFAULT_K
        if k <= 0:
            raise ValueError(f"RRF k must be positive, got {k}")
        self.k = k

    def fuse(
        self, lanes: Mapping[str, Sequence[LaneHit]], weights: Mapping[str, float] | None = None
    ) -> list[FusedHit]:
        terms: dict[int, dict[str, float]] = {}
        ranks: dict[int, dict[str, int]] = {}
        raw: dict[int, dict[str, float]] = {}
        first: dict[int, LaneHit] = {}
        for lane, hits in lanes.items():
            weight = (weights or {}).get(lane, 1.0)
            for rank, hit in enumerate(hits, start=1):
                if lane in ranks.get(hit.chunk_id, {}):
                    continue
                terms.setdefault(hit.chunk_id, {})[lane] = weight / (self.k + rank)
                ranks.setdefault(hit.chunk_id, {})[lane] = rank
                raw.setdefault(hit.chunk_id, {})[lane] = hit.score
                first.setdefault(hit.chunk_id, hit)
        scores = {cid: sum(parts.values()) for cid, parts in terms.items()}
        order = sorted(scores, key=lambda cid: (-scores[cid], cid))
        return [FusedHit(cid, scores[cid], ranks[cid], raw[cid], first[cid], terms[cid]) for cid in order]
