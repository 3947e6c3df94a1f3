"""The embedder that serves queries and new documents: the last reindex switch, else the setting.

Looked up at most every few seconds per process, so a switch made by `manage.py reindex` reaches
running web and worker processes without a restart (the old vectors keep serving until then).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

from django.conf import settings
from django.db import DatabaseError

from knowledge.models import ActiveEmbedder
from knowledge.pipeline.embedders.base import Embedder
from knowledge.pipeline.embedders.storage import HalfPrecision, split_spec, with_storage
from knowledge.pipeline.registry import build, configured_name
from knowledge.plugins import on_reset

REFRESH_SECONDS = 5.0
_lock = threading.Lock()
_cached: tuple[float, str] | None = None
_forced: str | None = None


@lru_cache(maxsize=4)
def embedder_for(spec: str) -> Embedder:
    """One instance per embedder spec and process (models load once); the configured one keeps its
    options. A spec ending in `@halfvec` stores that embedder's vectors at half precision."""
    name, storage = split_spec(spec)
    embedder = build("embedder") if name == configured_name("embedder") else build("embedder", name)
    assert isinstance(embedder, Embedder)
    return HalfPrecision(embedder) if storage == "halfvec" else embedder


def configured_spec() -> str:
    """The configured embedder with the configured storage (KNOWLEDGE_VECTOR_STORAGE)."""
    return with_storage(configured_name("embedder"), settings.KNOWLEDGE_VECTOR_STORAGE)


def active_spec() -> str:
    """The active embedder's spec: the switched one recorded in the database, else the setting."""
    global _cached
    with _lock:
        if _forced is not None:
            return _forced
        now = time.monotonic()
        if _cached is None or now - _cached[0] > REFRESH_SECONDS:
            try:
                row = ActiveEmbedder.objects.filter(pk=ActiveEmbedder.SINGLETON_ID).first()
            except DatabaseError:  # e.g. before migrations; the setting still works
                row = None
            _cached = (now, row.spec if row else configured_spec())
        return _cached[1]


def active_embedder() -> Embedder:
    return embedder_for(active_spec())


@contextmanager
def embedder_override(spec: str) -> Iterator[Embedder]:
    """This process embeds documents and queries with `spec` inside the block, whatever is switched;
    for offline comparisons (`evals retrieval --embedders`), never for serving."""
    global _forced
    embedder = embedder_for(spec)  # fails here, before anything is forced, on an unknown spec
    with _lock:
        previous, _forced = _forced, spec
    try:
        yield embedder
    finally:
        with _lock:
            _forced = previous


def forget_active_embedder() -> None:
    """Drop the cached lookup (after a switch in this process, and in tests)."""
    global _cached
    with _lock:
        _cached = None
    embedder_for.cache_clear()


on_reset(forget_active_embedder)
