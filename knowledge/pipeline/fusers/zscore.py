"""Z-score fusion: standardise each lane's scores of the query, then α·vector + (1−α)·keyword."""

from __future__ import annotations

from collections.abc import Mapping

from knowledge.pipeline.fusers.scores import Normalised, ScoreFuser, mean_and_stdev

MISSING = ("min", "mean")


class ZScoreFuser(ScoreFuser):
    """Convex combination of z-scores: (score − mean) / standard deviation of the lane's hits.

    Compared with min-max, which stretches every lane to [0, 1], a lane counts here as much as its
    best hits stand out from the rest of its list: a keyword lane whose top match is barely better
    than its other matches moves the ranking little. (It is min-max fusion with query-adaptive lane
    weights, range / standard deviation of each lane.) The standard deviation is the sample one.

    A chunk a lane did not return counts as that lane's lowest z-score (`missing="min"`, the default:
    being returned never hurts), or as its mean, 0 (`missing="mean"`, CombSUM of z-scores as in
    Montague & Aslam 2001). A lane with fewer than two distinct scores cannot rank its hits, so it
    adds 0 to every chunk.
    """

    def __init__(self, alpha: float | None = None, missing: str = "min") -> None:
        super().__init__(alpha)
        if missing not in MISSING:
            raise ValueError(f"missing must be one of {', '.join(MISSING)}, got {missing!r}")
        self.missing = missing

    def normalise(self, lane: str, scores: Mapping[int, float]) -> Normalised:
        mean, spread = mean_and_stdev(list(scores.values()))
        if spread == 0.0:
            return Normalised(dict.fromkeys(scores, 0.0), 0.0)
        z = {key: (value - mean) / spread for key, value in scores.items()}
        return Normalised(z, min(z.values()) if self.missing == "min" else 0.0)
