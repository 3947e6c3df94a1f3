"""Resolves each pipeline layer from settings: a short name or a dotted path, built once per process."""

from __future__ import annotations

from functools import lru_cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from knowledge.pipeline.chunkers.base import Chunker
from knowledge.pipeline.embedders.base import Embedder

EMBEDDERS = {
    "hashing": "knowledge.pipeline.embedders.hashing.HashingEmbedder",
}
CHUNKERS = {
    "heading-prefix": "knowledge.pipeline.chunkers.heading_prefix.HeadingPrefixChunker",
}


def _build(layer: str, name: str, aliases: dict[str, str], base: type) -> object:
    path = aliases.get(name, name)
    try:
        factory = import_string(path)
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"KNOWLEDGE_{layer.upper()}={name!r}: cannot import {path!r} ({exc}). "
            f"Known names: {', '.join(sorted(aliases))}."
        ) from exc
    instance = factory()
    if not isinstance(instance, base):
        raise ImproperlyConfigured(f"KNOWLEDGE_{layer.upper()}={name!r} is not a {base.__name__}.")
    return instance


@lru_cache(maxsize=1)
def get_embedder() -> Embedder:
    """The active embedder (loaded once per process)."""
    embedder = _build("embedder", settings.KNOWLEDGE_EMBEDDER, EMBEDDERS, Embedder)
    assert isinstance(embedder, Embedder)
    return embedder


@lru_cache(maxsize=1)
def get_chunker() -> Chunker:
    """The active chunker."""
    chunker = _build("chunker", getattr(settings, "KNOWLEDGE_CHUNKER", "heading-prefix"), CHUNKERS, Chunker)
    assert isinstance(chunker, Chunker)
    return chunker


def reset_pipeline() -> None:
    get_embedder.cache_clear()
    get_chunker.cache_clear()
