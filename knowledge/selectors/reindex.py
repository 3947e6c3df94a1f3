"""Before a blue/green switch: how much the new model's nearest chunks agree with the active model's."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean

from knowledge.pipeline.embedders.base import Embedder
from knowledge.store import vectors as stored

QUERY_WORDS = 12  # a sample query is the start of a stored chunk, about a question's length


@dataclass(frozen=True)
class ModelOverlap:
    """Top-k overlap (|old ∩ new| / k) over sample queries; queries = 0 when no chunk holds both."""

    queries: int
    k: int
    mean: float
    lowest: float


def models_overlap(*, old: Embedder, new: Embedder, sample: int = 20, k: int = 10) -> ModelOverlap:
    """Embed `sample` queries (the opening words of random chunks holding both models' vectors) with
    each model and compare each model's k nearest chunks in the query's tenant (exact scans)."""
    rows = stored.sample_chunks_with_models(old.name, new.name, sample)
    overlaps = []
    for tenant_id, text in rows:
        query = " ".join(text.split()[:QUERY_WORDS])
        before = stored.nearest_chunks(tenant_id, old.name, old.embed_queries([query])[0], k)
        after = stored.nearest_chunks(tenant_id, new.name, new.embed_queries([query])[0], k)
        if before:
            overlaps.append(len(set(before) & set(after)) / min(k, len(before)))
    if not overlaps:
        return ModelOverlap(0, k, 0.0, 0.0)
    return ModelOverlap(len(overlaps), k, round(mean(overlaps), 3), round(min(overlaps), 3))
