"""Weighted score fusion: min-max normalise each lane's scores, then α·vector + (1−α)·keyword."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.conf import settings

from knowledge.pipeline.fusers.base import FusedHit, Fuser
from retrieval_backends.types import LaneHit

DEFAULT_ALPHA = 0.5


def min_max(scores: Mapping[int, float]) -> dict[int, float]:
    """Scale to [0, 1]; when every score is equal, each counts fully (1.0)."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high == low:
        return dict.fromkeys(scores, 1.0)
    return {key: (value - low) / (high - low) for key, value in scores.items()}


class WeightedFuser(Fuser):
    """Convex combination of normalised lane scores; a hit missing from a lane gets 0 for that lane.

    `alpha` (default: the KNOWLEDGE_FUSION_ALPHA setting, else 0.5) weighs the vector lane and
    `1 − alpha` the keyword lane. `fuse(weights=...)` replaces these per-lane weights; a lane with no
    weight (neither vector nor keyword, nor named in `weights`) counts 0.
    """

    def __init__(self, alpha: float | None = None) -> None:
        if alpha is None:
            alpha = float(getattr(settings, "KNOWLEDGE_FUSION_ALPHA", DEFAULT_ALPHA))
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
        self.alpha = alpha

    def fuse(
        self, lanes: Mapping[str, Sequence[LaneHit]], weights: Mapping[str, float] | None = None
    ) -> list[FusedHit]:
        weights = weights if weights is not None else {"vector": self.alpha, "keyword": 1.0 - self.alpha}
        totals: dict[int, float] = {}
        ranks: dict[int, dict[str, int]] = {}
        raw: dict[int, dict[str, float]] = {}
        first: dict[int, LaneHit] = {}
        for lane, hits in lanes.items():
            lane_scores: dict[int, float] = {}
            for rank, hit in enumerate(hits, start=1):
                if hit.chunk_id in lane_scores:
                    continue
                lane_scores[hit.chunk_id] = hit.score
                ranks.setdefault(hit.chunk_id, {})[lane] = rank
                raw.setdefault(hit.chunk_id, {})[lane] = hit.score
                first.setdefault(hit.chunk_id, hit)
            for chunk_id, normalised in min_max(lane_scores).items():
                totals[chunk_id] = totals.get(chunk_id, 0.0) + weights.get(lane, 0.0) * normalised
        order = sorted(totals, key=lambda cid: (-totals[cid], cid))
        return [FusedHit(cid, totals[cid], ranks[cid], raw[cid], first[cid]) for cid in order]
