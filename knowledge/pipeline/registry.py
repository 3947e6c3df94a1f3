"""Resolves each pipeline layer from settings: a short name or a dotted path, built once per process."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from knowledge.pipeline.chunkers.base import Chunker
from knowledge.pipeline.compressors.base import Compressor
from knowledge.pipeline.embedders.base import Embedder
from knowledge.pipeline.fusers.base import Fuser
from knowledge.pipeline.rerankers.base import Reranker

T = TypeVar("T")

LAYERS: dict[str, tuple[type, dict[str, str]]] = {
    "embedder": (
        Embedder,
        {
            "hashing": "knowledge.pipeline.embedders.hashing.HashingEmbedder",
        },
    ),
    "chunker": (
        Chunker,
        {
            "heading-prefix": "knowledge.pipeline.chunkers.heading_prefix.HeadingPrefixChunker",
        },
    ),
    "fuser": (Fuser, {"rrf": "knowledge.pipeline.fusers.rrf.RRFFuser"}),
    "reranker": (Reranker, {"none": "knowledge.pipeline.rerankers.none.NoReranker"}),
    "compressor": (Compressor, {"none": "knowledge.pipeline.compressors.none.NoCompressor"}),
}
DEFAULTS = {
    "embedder": "hashing",
    "chunker": "heading-prefix",
    "fuser": "rrf",
    "reranker": "none",
    "compressor": "none",
}


def configured_name(layer: str) -> str:
    """The configured plugin of a layer (environment beats the settings default)."""
    return str(getattr(settings, f"KNOWLEDGE_{layer.upper()}", None) or DEFAULTS[layer])


def build(layer: str, name: str | None = None, **options: Any) -> Any:
    """Instantiate a layer's plugin by short name or dotted path, checking it is of the right layer."""
    base, aliases = LAYERS[layer]
    name = name or configured_name(layer)
    path = aliases.get(name, name)
    try:
        factory = import_string(path)
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"KNOWLEDGE_{layer.upper()}={name!r}: cannot import {path!r} ({exc}). "
            f"Known names: {', '.join(sorted(aliases))}."
        ) from exc
    instance = factory(**options)
    if not isinstance(instance, base):
        raise ImproperlyConfigured(f"KNOWLEDGE_{layer.upper()}={name!r} is not a {base.__name__}.")
    return instance


@lru_cache(maxsize=1)
def get_embedder() -> Embedder:
    """The active embedder (loaded once per process)."""
    return build("embedder")  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def get_chunker() -> Chunker:
    return build("chunker")  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def get_fuser() -> Fuser:
    return build("fuser")  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def get_reranker() -> Reranker:
    return build("reranker")  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def get_compressor() -> Compressor:
    return build("compressor")  # type: ignore[no-any-return]


def reset_pipeline() -> None:
    for getter in (get_embedder, get_chunker, get_fuser, get_reranker, get_compressor):
        getter.cache_clear()
