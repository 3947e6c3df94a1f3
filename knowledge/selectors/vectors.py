"""Reads stored chunk vectors (for rerankers that work on embeddings)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.db import connection


def chunk_vectors(
    *, chunk_ids: Sequence[int], dimensions: int, model: str | None
) -> dict[int, tuple[float, ...]]:
    """Vectors of these chunks with this dimension (and model, when given); chunks without one are absent."""
    if not chunk_ids:
        return {}
    sql = (
        "SELECT chunk_id, embedding::text FROM knowledge_chunkembedding "
        "WHERE chunk_id = ANY(%s) AND dimensions = %s"
    )
    params: list[Any] = [list(chunk_ids), dimensions]
    if model is not None:
        sql += " AND model = %s"
        params.append(model)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {chunk_id: tuple(json.loads(text)) for chunk_id, text in cursor.fetchall()}
