"""Score fusion: normalise each lane's scores per query, then add them up with per-lane weights."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from knowledge.pipeline.fusers.base import FusedHit, Fuser
from retrieval_backends.types import LaneHit

DEFAULT_ALPHA = 0.5


@dataclass(frozen=True)
class Normalised:
    """One lane's normalised scores, and the value a chunk the lane did not return counts as."""

    scores: dict[int, float] = field(default_factory=dict)
    missing: float = 0.0


def lane_scores(hits: Sequence[LaneHit]) -> dict[int, float]:
    """Chunk id → score in rank order; a repeated chunk keeps its first (best) score."""
    scores: dict[int, float] = {}
    for hit in hits:
        scores.setdefault(hit.chunk_id, hit.score)
    return scores


def mean_and_stdev(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for fewer than two values); two passes, no fractions."""
    mean = math.fsum(values) / len(values) if values else 0.0
    if len(values) < 2:
        return mean, 0.0
    return mean, math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


class ScoreFuser(Fuser):
    """Σ over lanes of weight × normalised score; subclasses define `normalise`.

    `alpha` (default: the KNOWLEDGE_FUSION_ALPHA setting, else 0.5) weighs the vector lane and
    `1 − alpha` the keyword lane. `fuse(weights=...)` replaces these per-lane weights; a lane with no
    weight (neither vector nor keyword, nor named in `weights`) counts 0. A chunk missing from a lane
    gets that lane's `missing` value. Each hit's `terms` holds every lane's share of its score.
    """

    def __init__(self, alpha: float | None = None) -> None:
        alpha = DEFAULT_ALPHA if alpha is None else alpha
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
        self.alpha = alpha

    def normalise(self, lane: str, scores: Mapping[int, float]) -> Normalised:
        raise NotImplementedError("score fusers must implement normalise()")

    def fuse(
        self, lanes: Mapping[str, Sequence[LaneHit]], weights: Mapping[str, float] | None = None
    ) -> list[FusedHit]:
        weights = weights if weights is not None else {"vector": self.alpha, "keyword": 1.0 - self.alpha}
        ranks: dict[int, dict[str, int]] = {}
        raw: dict[int, dict[str, float]] = {}
        first: dict[int, LaneHit] = {}
        normalised: dict[str, Normalised] = {}
        for lane, hits in lanes.items():
            scores = lane_scores(hits)
            for rank, hit in enumerate(hits, start=1):
                if lane not in ranks.setdefault(hit.chunk_id, {}):
                    ranks[hit.chunk_id][lane] = rank
                    raw.setdefault(hit.chunk_id, {})[lane] = hit.score
                    first.setdefault(hit.chunk_id, hit)
            normalised[lane] = self.normalise(lane, scores) if scores else Normalised()
        terms = {
            cid: {
                lane: weights.get(lane, 0.0) * n.scores.get(cid, n.missing) for lane, n in normalised.items()
            }
            for cid in first
        }
        totals = {cid: sum(parts.values()) for cid, parts in terms.items()}
        order = sorted(totals, key=lambda cid: (-totals[cid], cid))
        return [FusedHit(cid, totals[cid], ranks[cid], raw[cid], first[cid], terms[cid]) for cid in order]
