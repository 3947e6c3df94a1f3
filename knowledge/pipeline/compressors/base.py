"""The compressor contract."""

from __future__ import annotations

from collections.abc import Sequence

from knowledge.pipeline.types import Candidate, Query


class Compressor:
    """Returns the hits (same order, a prefix of them at most) with content trimmed so that the
    total stays within `token_budget` whitespace tokens; the top hit is never dropped entirely."""

    def compress(self, query: Query, hits: Sequence[Candidate], token_budget: int) -> list[Candidate]:
        raise NotImplementedError("compressors must implement compress()")
