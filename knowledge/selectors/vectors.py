"""Reads stored chunk vectors (for rerankers that work on embeddings), through the backend contract."""

from __future__ import annotations

from collections.abc import Sequence

from knowledge.store.vectors import get_chunk_vectors


def chunk_vectors(
    *, chunk_ids: Sequence[int], dimensions: int, model: str | None
) -> dict[int, tuple[float, ...]]:
    """Vectors of these chunks with this dimension (and model, when given); chunks without one are absent."""
    return get_chunk_vectors(chunk_ids, dimensions, model)
