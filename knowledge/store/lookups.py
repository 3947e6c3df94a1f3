"""The small look-ups every search makes (languages, vector models and dimensions, statistics), cached.

Answers are cached per process (`LookupCache`): writes through the store clear them, and so do ORM
writes of chunks, vectors and statistics (signals below); only answers whose staleness is harmless
("it exists") are kept, so a "nothing there" never hides what was just written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.db.models.signals import post_delete, post_save

from knowledge.models import Chunk, ChunkEmbedding, KeywordStatistics
from knowledge.store.lookup_cache import LookupCache
from knowledge.store.search import bm25
from knowledge.store.sql import connector_filter, distinct_values, embedding_models
from knowledge.store.tables import CHUNK, EMBEDDING

LOOKUPS = LookupCache()


def _key(connector_ids: Sequence[int] | None) -> tuple[int, ...] | None:
    return None if connector_ids is None else tuple(sorted(connector_ids))


def text_search_languages(tenant_id: int, connector_ids: Sequence[int] | None) -> list[str]:
    """Text-search configurations used by the live chunks of these connectors (all when None)."""
    where, params = connector_filter("t", connector_ids)
    return list(
        LOOKUPS.get(
            ("languages", tenant_id, _key(connector_ids)),
            lambda: distinct_values(CHUNK, "language", f"NOT t.is_deleted AND {where}", tenant_id, params),
        )
    )


def embedding_models_of(tenant_id: int) -> list[tuple[int, str]]:
    """(dimensions, model) pairs of the tenant's stored vectors, ascending."""
    return list(LOOKUPS.get(("models", tenant_id), lambda: embedding_models(tenant_id)))


def populated_dimensions(tenant_id: int, connector_ids: Sequence[int] | None) -> list[int]:
    """Dimensions for which at least one vector is stored, ascending."""
    where, params = connector_filter("t", connector_ids)
    return distinct_values(EMBEDDING, "dimensions", where, tenant_id, params)


def has_embedding_model(tenant_id: int, model: str) -> bool:
    """Whether the tenant has at least one vector written by this embedding model."""
    return bool(
        LOOKUPS.get(
            ("has-model", tenant_id, model),
            ChunkEmbedding.objects.filter(tenant_id=tenant_id, model=model).exists,
        )
    )


def has_keyword_statistics(tenant_id: int, languages: Sequence[str]) -> bool:
    """Whether BM25 corpus statistics exist for the tenant in these languages."""

    def ask() -> bool:
        with connection.cursor() as cursor:
            return bm25.has_statistics(cursor, tenant_id, languages)

    return bool(LOOKUPS.get(("statistics", tenant_id, tuple(sorted(languages))), ask))


def supported_languages() -> set[str]:
    """Language names documents may use: PostgreSQL's text-search configurations."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT cfgname::text FROM pg_ts_config")
        return {row[0] for row in cursor.fetchall()}


def _model_written(**kwargs: Any) -> None:
    """ORM writes (admin, factories, a deleted statistics row) clear the look-ups like store writes."""
    LookupCache.written_everywhere()


# Not post_delete on chunks and vectors: a receiver would stop Django's fast cascade deletes, and a
# stale "it exists" after a delete does no harm.
for _model in (Chunk, ChunkEmbedding, KeywordStatistics):
    post_save.connect(_model_written, sender=_model, dispatch_uid=f"lookups-{_model.__name__}-save")
post_delete.connect(_model_written, sender=KeywordStatistics, dispatch_uid="lookups-statistics-delete")
