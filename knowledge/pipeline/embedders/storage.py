"""Half-precision storage of another embedder's vectors: the same vectors under a model key of their own.

KNOWLEDGE_VECTOR_STORAGE=halfvec makes the configured spec `<spec>@halfvec`; its vectors are stored
in PostgreSQL's `halfvec` column (and an external index's compact encoding). The key differs from the
full-precision one, so the blue/green reindex writes them beside the serving vectors and switches
atomically, as for a new model (without embedding again: it converts the stored vectors).
"""

from __future__ import annotations

from collections.abc import Sequence

from knowledge.pipeline.embedders.base import Embedder
from retrieval_backends.types import HALFVEC_SUFFIX

STORAGES = ("vector", "halfvec")


def split_spec(spec: str) -> tuple[str, str]:
    """(embedder spec, storage) of a spec that may end in `@halfvec`."""
    if spec.endswith(HALFVEC_SUFFIX):
        return spec[: -len(HALFVEC_SUFFIX)], "halfvec"
    return spec, "vector"


def with_storage(spec: str, storage: str) -> str:
    base, _ = split_spec(spec)
    return base + HALFVEC_SUFFIX if storage == "halfvec" else base


class HalfPrecision(Embedder):
    """Delegates to `inner`; only the model key (and so where vectors are stored) differs."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name + HALFVEC_SUFFIX
        self.dimension = inner.dimension

    def __getattr__(self, attribute: str) -> object:  # e.g. the local embedder's `model` for doctor
        return getattr(self.inner, attribute)

    def prepare(self) -> None:
        self.inner.prepare()

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self.inner.embed_queries(texts)

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return self.inner.embed_batch(texts)
