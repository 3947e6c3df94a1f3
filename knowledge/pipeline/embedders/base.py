"""The embedder contract."""

from __future__ import annotations

from collections.abc import Sequence

# Model name recorded for vectors that API callers supplied themselves.
CLIENT_MODEL = "client-supplied"


class EmbedderError(Exception):
    """Embedding failed. `permanent` says whether retrying can help."""

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


class Embedder:
    """Maps text to a vector of `dimension` floats, L2-normalised.

    `name` identifies the model; it is recorded with every stored vector, so two embedders with
    different vectors must have different names. `embed_batch` returns one vector per input, in order.
    """

    name: str = "base"
    dimension: int = 0

    def embed(self, text: str) -> list[float]:
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        raise NotImplementedError("embedders must implement embed_batch()")
