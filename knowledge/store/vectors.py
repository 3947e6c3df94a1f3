"""Vectors of the canonical store: writes, reads for stages and pushes, and the reindex's questions."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.db import connection

from knowledge.models import ChunkEmbedding
from knowledge.store.chunks import index_embeddings
from knowledge.store.lookups import LOOKUPS
from knowledge.store.sql import VECTOR_TEXT
from knowledge.store.tables import CHUNK, EMBEDDING, TENANT
from knowledge.store.vector_indexes import column_and_cast
from retrieval_backends.types import vector_storage

__all__ = [
    "chunks_missing_embedding",
    "convert_embeddings",
    "model_is_stored",
    "nearest_chunks",
    "sample_chunks_with_models",
    "count_chunks_missing_embedding",
    "embedding_inventory",
    "get_chunk_vectors",
    "index_embeddings",
    "prune_embeddings",
]

MISSING = f"""
SELECT c.id, c.content FROM {CHUNK} c
WHERE c.id > %s AND NOT EXISTS (SELECT 1 FROM {EMBEDDING} e WHERE e.chunk_id = c.id AND e.model = %s)
ORDER BY c.id LIMIT %s
"""
COUNT_MISSING = (
    f"SELECT count(*) FROM {CHUNK} c WHERE NOT EXISTS "
    f"(SELECT 1 FROM {EMBEDDING} e WHERE e.chunk_id = c.id AND e.model = %s)"
)
INVENTORY = f"""
SELECT t.slug,
       count(DISTINCT e.chunk_id),
       count(DISTINCT e.chunk_id) FILTER (WHERE e.model = %(model)s AND e.dimensions = %(dimensions)s),
       array_agg(DISTINCT e.model || ' (' || e.dimensions || ' dimensions)')
           FILTER (WHERE e.model <> %(model)s OR e.dimensions <> %(dimensions)s)
FROM {EMBEDDING} e JOIN {TENANT} t ON t.id = e.tenant_id
WHERE e.model <> ALL(%(ignored)s) AND NOT e.is_deleted
GROUP BY t.slug ORDER BY t.slug
"""


SAMPLE_BOTH = f"""
SELECT c.tenant_id, c.content FROM {CHUNK} c TABLESAMPLE BERNOULLI (%(percent)s)
WHERE NOT c.is_deleted
  AND EXISTS (SELECT 1 FROM {EMBEDDING} e WHERE e.chunk_id = c.id AND e.model = %(old)s)
  AND EXISTS (SELECT 1 FROM {EMBEDDING} e WHERE e.chunk_id = c.id AND e.model = %(new)s)
ORDER BY random() LIMIT %(limit)s
"""
ESTIMATED_CHUNKS = f"SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = '{CHUNK}'::regclass"


def sample_chunks_with_models(old: str, new: str, limit: int) -> list[tuple[int, str]]:
    """(tenant id, text) of up to `limit` random live chunks holding vectors of both models."""
    with connection.cursor() as cursor:
        cursor.execute(ESTIMATED_CHUNKS)
        estimate = float(cursor.fetchone()[0] or 0)
        # About 50 candidates per wanted row (a built-in sample, so no full scan of a big table).
        percent = 100.0 if estimate < limit * 50 else max(0.001, 100.0 * limit * 50 / estimate)
        cursor.execute(SAMPLE_BOTH, {"percent": percent, "old": old, "new": new, "limit": limit})
        return [(int(tenant), str(text)) for tenant, text in cursor.fetchall()]


def nearest_chunks(tenant_id: int, model: str, vector: Sequence[float], k: int) -> list[int]:
    """The k live chunks of a tenant nearest to `vector` among one model's vectors (an exact scan)."""
    storage = vector_storage(model)
    column, _, _ = column_and_cast(storage, len(vector))
    # Un-cast, so no HNSW index can serve it: the exact order.
    sql = (
        f"SELECT chunk_id FROM {EMBEDDING} WHERE tenant_id = %s AND model = %s AND dimensions = %s "
        f"AND NOT is_deleted ORDER BY {column} <=> %s::{storage}, chunk_id LIMIT %s"
    )
    dimensions = len(vector)
    with connection.cursor() as cursor:
        cursor.execute(sql, [tenant_id, model, dimensions, json.dumps(list(vector)), k])
        return [int(row[0]) for row in cursor.fetchall()]


CONVERT = f"""
INSERT INTO {EMBEDDING}
    (chunk_id, model, dimensions, embedding, embedding_half, tenant_id, connector_id, environment_id,
     is_deleted, acl_tokens, created_at)
SELECT s.chunk_id, %(target)s, s.dimensions,
       CASE WHEN NOT %(half)s THEN coalesce(s.embedding, s.embedding_half::vector) END,
       CASE WHEN %(half)s THEN coalesce(s.embedding_half, s.embedding::halfvec) END,
       c.tenant_id, c.connector_id, c.environment_id, c.is_deleted, c.acl_tokens, now()
FROM {EMBEDDING} s JOIN {CHUNK} c ON c.id = s.chunk_id
WHERE s.model = %(source)s AND s.chunk_id > %(after)s
ORDER BY s.chunk_id LIMIT %(limit)s
FOR SHARE OF c
ON CONFLICT (chunk_id, model) DO NOTHING
RETURNING chunk_id
"""


def convert_embeddings(source: str, target: str, after_id: int, limit: int) -> tuple[int, int]:
    """Copy up to `limit` of `source`'s vectors (chunk id > `after_id`) as `target`'s, converted to
    `target`'s storage; chunks that already have one keep it. Returns (rows read, last chunk id read)."""
    LOOKUPS.written()
    half = vector_storage(target) == "halfvec"
    params: dict[str, str | int | bool] = {
        "source": source, "target": target, "after": after_id, "half": half, "limit": limit
    }  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*), max(chunk_id) FROM (SELECT chunk_id FROM {EMBEDDING} WHERE model = %(source)s "
            "AND chunk_id > %(after)s ORDER BY chunk_id LIMIT %(limit)s) s",
            params,
        )
        read, last = cursor.fetchone()
        if read:
            cursor.execute(CONVERT, params)
    return int(read), int(last or after_id)


def model_is_stored(model: str) -> bool:
    """Whether any chunk has a vector of this model key."""
    return ChunkEmbedding.objects.filter(model=model).exists()


def chunks_missing_embedding(model: str, after_id: int, limit: int) -> list[tuple[int, str]]:
    """(chunk id, text) of up to `limit` chunks after `after_id` with no vector of `model`, by id."""
    with connection.cursor() as cursor:
        cursor.execute(MISSING, [after_id, model, limit])
        return [(int(pk), str(content)) for pk, content in cursor.fetchall()]


def count_chunks_missing_embedding(model: str) -> int:
    """How many chunks have no vector of `model` (a reindex may switch when this is 0)."""
    with connection.cursor() as cursor:
        cursor.execute(COUNT_MISSING, [model])
        return int(cursor.fetchone()[0])


def prune_embeddings(keep_models: Sequence[str]) -> int:
    """Delete every vector of models not in `keep_models`; returns how many went."""
    LOOKUPS.written()
    deleted, _ = ChunkEmbedding.objects.exclude(model__in=list(keep_models)).delete()
    return deleted


def get_chunk_vectors(
    chunk_ids: Sequence[int], dimensions: int, model: str | None
) -> dict[int, tuple[float, ...]]:
    """Stored vectors of these chunks with this dimension (and model); chunks without one are absent."""
    if not chunk_ids:
        return {}
    sql = (
        f"SELECT chunk_id, {VECTOR_TEXT.format(EMBEDDING)} FROM {EMBEDDING} "
        "WHERE chunk_id = ANY(%s) AND dimensions = %s"
    )
    params: list[Any] = [list(chunk_ids), dimensions]
    if model is not None:
        sql += " AND model = %s"
        params.append(model)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {chunk_id: tuple(json.loads(text)) for chunk_id, text in cursor.fetchall()}


def embedding_inventory(model: str, dimensions: int, ignored: Sequence[str]) -> list[tuple[Any, ...]]:
    """Per tenant: (slug, chunks with any vector, chunks with `model`'s, the other models stored)."""
    with connection.cursor() as cursor:
        cursor.execute(INVENTORY, {"model": model, "dimensions": dimensions, "ignored": list(ignored)})
        return list(cursor.fetchall())
