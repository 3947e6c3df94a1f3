"""Reads stored chunk vectors (for rerankers that work on embeddings), through the backend contract."""

from __future__ import annotations

from collections.abc import Sequence

from retrieval_backends.registry import get_backend


def chunk_vectors(
    *, chunk_ids: Sequence[int], dimensions: int, model: str | None
) -> dict[int, tuple[float, ...]]:
    """Vectors of these chunks with this dimension (and model, when given); chunks without one are absent."""
    return get_backend().get_chunk_vectors(chunk_ids, dimensions, model)
