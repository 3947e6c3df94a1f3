"""Weighted score fusion: min-max normalise each lane's scores, then α·vector + (1−α)·keyword."""

from __future__ import annotations

from collections.abc import Mapping

from knowledge.pipeline.fusers.scores import Normalised, ScoreFuser

NORMALIZATIONS = ("minmax", "theoretical")
# The lowest score each lane can give: cosine similarity −1, BM25 0 (Bruch, Gai & Ingber 2023, "TM2C2").
THEORETICAL_MINIMA = {"vector": -1.0, "keyword": 0.0}


def min_max(scores: Mapping[int, float]) -> dict[int, float]:
    """Scale to [0, 1]; when every score is equal, each counts fully (1.0)."""
    if not scores:
        return {}
    return scale(scores, min(scores.values()))


def scale(scores: Mapping[int, float], low: float) -> dict[int, float]:
    """(score − low) / (max − low); when the maximum is not above `low`, each counts fully (1.0)."""
    high = max(scores.values())
    if high <= low:
        return dict.fromkeys(scores, 1.0)
    return {key: (value - low) / (high - low) for key, value in scores.items()}


class WeightedFuser(ScoreFuser):
    """Convex combination of normalised lane scores; a hit missing from a lane gets 0 for that lane.

    `normalization="minmax"` (the default) maps each lane's lowest and highest score of this query to
    0 and 1. `"theoretical"` maps the lowest score the lane can give (`minima`, by default cosine −1 and
    BM25 0; the query's own minimum for other lanes) to 0 and the query's highest score to 1.
    """

    def __init__(
        self,
        alpha: float | None = None,
        normalization: str = "minmax",
        minima: Mapping[str, float] | None = None,
    ) -> None:
        super().__init__(alpha)
        if normalization not in NORMALIZATIONS:
            choices = ", ".join(NORMALIZATIONS)
            raise ValueError(f"normalization must be one of {choices}, got {normalization!r}")
        self.normalization = normalization
        self.minima = dict(THEORETICAL_MINIMA if minima is None else minima)

    def normalise(self, lane: str, scores: Mapping[int, float]) -> Normalised:
        if self.normalization == "theoretical" and lane in self.minima:
            return Normalised(scale(scores, self.minima[lane]))
        return Normalised(min_max(scores))
