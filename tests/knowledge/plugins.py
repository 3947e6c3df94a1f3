"""Pipeline plugins used by tests (referenced by dotted path, like a user's own plugins)."""

from __future__ import annotations

from knowledge.pipeline.embedders.hashing import HashingEmbedder


class Hashing256Embedder(HashingEmbedder):
    """A second, different embedding model: 256-dimensional feature hashing."""

    def __init__(self) -> None:
        super().__init__(dimension=256)
