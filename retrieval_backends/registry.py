"""Retrieval backends by alias (settings.RETRIEVAL_BACKENDS, like CACHES); RETRIEVAL_BACKEND serves."""

from __future__ import annotations

from django.conf import settings

from knowledge.plugins import Plugins, PluginSpec, process_singleton
from retrieval_backends.base import KnowledgeRetrievalBackend

BACKENDS: Plugins[KnowledgeRetrievalBackend] = Plugins(
    "retrieval backend", KnowledgeRetrievalBackend, "RETRIEVAL_BACKENDS"
)


def serving_spec() -> PluginSpec:
    """The serving backend's choice: settings.RETRIEVAL_BACKEND (an alias, a dotted path, or an entry)."""
    return BACKENDS.spec(settings.RETRIEVAL_BACKEND, "KNOWLEDGE_RETRIEVAL_BACKEND")


def load_backend_class(spec: PluginSpec | None = None) -> type[KnowledgeRetrievalBackend]:
    """The class of a backend choice (the serving one by default); ImproperlyConfigured says why not."""
    return BACKENDS.load(spec or serving_spec())


@process_singleton
def backend(alias: str | None = None) -> KnowledgeRetrievalBackend:
    """One process-wide instance per alias; `None` is the serving backend. A bench or an operator tool
    can hold two at once (the same corpus on both backends) without touching the serving setting."""
    spec = serving_spec() if alias is None else BACKENDS.spec(alias, "the caller")
    return BACKENDS.build(spec)


def get_backend() -> KnowledgeRetrievalBackend:
    """The serving backend of this process."""
    return backend()


def reset_backend() -> None:
    """Forget the cached instances (tests and settings changes)."""
    backend.cache_clear()  # type: ignore[attr-defined]
