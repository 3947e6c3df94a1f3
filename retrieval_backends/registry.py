"""The deployment-wide retrieval backend, built once from settings.RETRIEVAL_BACKEND (like CACHES)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from retrieval_backends.base import KnowledgeRetrievalBackend


def load_backend_class(path: str) -> type[KnowledgeRetrievalBackend]:
    """Import a backend class by dotted path, turning failures into ImproperlyConfigured."""
    try:
        cls = import_string(path)
    except ImportError as exc:
        aliases = ", ".join(sorted(getattr(settings, "RETRIEVAL_BACKEND_ALIASES", {})))
        raise ImproperlyConfigured(
            f"KNOWLEDGE_RETRIEVAL_BACKEND: cannot import {path!r} ({exc}). "
            f"Use one of: {aliases}, or a dotted path to a KnowledgeRetrievalBackend subclass."
        ) from exc
    if not (isinstance(cls, type) and issubclass(cls, KnowledgeRetrievalBackend)):
        raise ImproperlyConfigured(f"{path!r} is not a KnowledgeRetrievalBackend subclass.")
    return cls


def build_backend(config: Mapping[str, Any]) -> KnowledgeRetrievalBackend:
    """Instantiate a backend from a {"BACKEND": ..., "OPTIONS": {...}} mapping."""
    path = config.get("BACKEND")
    if not isinstance(path, str) or not path:
        raise ImproperlyConfigured("RETRIEVAL_BACKEND['BACKEND'] must be a dotted path.")
    options = config.get("OPTIONS") or {}
    if not isinstance(options, dict):
        raise ImproperlyConfigured("RETRIEVAL_BACKEND['OPTIONS'] must be a dict.")
    return load_backend_class(path)(**options)


@lru_cache(maxsize=1)
def get_backend() -> KnowledgeRetrievalBackend:
    """The one backend instance of this process."""
    return build_backend(settings.RETRIEVAL_BACKEND)


def reset_backend() -> None:
    """Forget the cached instance (tests and settings changes)."""
    get_backend.cache_clear()
