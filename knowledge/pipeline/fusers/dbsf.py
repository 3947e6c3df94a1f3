"""Distribution-based score fusion (Qdrant's DBSF): each lane's mean ± 3σ becomes [0, 1], then summed."""

from __future__ import annotations

from collections.abc import Mapping

from knowledge.pipeline.fusers.scores import Normalised, ScoreFuser, mean_and_stdev


class DBSFFuser(ScoreFuser):
    """As Qdrant computes it: (score − (μ − 3σ)) / 6σ with the sample standard deviation σ, not clipped;
    a lane with a single hit or equal scores gives each 0.5; a chunk missing from a lane gets 0 there.

    The lanes are weighted α (vector) and 1 − α (keyword); Qdrant's plain sum is alpha 0.5, scaled by 2.
    """

    def normalise(self, lane: str, scores: Mapping[int, float]) -> Normalised:
        mean, spread = mean_and_stdev(list(scores.values()))
        if spread == 0.0:
            return Normalised(dict.fromkeys(scores, 0.5))
        low = mean - 3.0 * spread
        return Normalised({key: (value - low) / (6.0 * spread) for key, value in scores.items()})
