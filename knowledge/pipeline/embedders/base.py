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
    Search queries go through `embed_queries`, which an embedder may serve faster (the local one does),
    as long as the vectors stay comparable with the documents' `embed_batch` vectors.
    """

    name: str = "base"
    dimension: int = 0

    def embed(self, text: str) -> list[float]:
        return self.embed_batch([text])[0]

    def prepare(self) -> None:
        """Do any one-time work now rather than on the first call (nothing by default)."""

    def embed_query(self, text: str) -> list[float]:
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_batch(texts)

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        raise NotImplementedError("embedders must implement embed_batch()")
