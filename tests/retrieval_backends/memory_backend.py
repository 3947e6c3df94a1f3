"""A toy external index in plain Python: proof that a third backend needs only the contract.

It keeps pushed document states in dictionaries per generation, and answers both lanes by brute
force with the scope applied before ranking (BM25 over a crude English stemmer, exact cosine). Not
for production: everything lives in one process.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from retrieval_backends.base import BackendUnavailable, ExternalIndex, LaneTimedOut
from retrieval_backends.types import (
    DocumentState,
    LaneHit,
    SearchScope,
    keyword_lane_can_match,
    vector_lane_can_match,
)

WORD = re.compile(r"[a-z0-9]+")
STOP = frozenset({"the", "a", "an", "of", "for", "and", "or", "to", "in", "on", "over", "about", "with"})


def stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    return [stem(w) for w in WORD.findall(text.lower()) if w not in STOP]


@dataclass
class Entry:
    state: DocumentState
    chunk_id: int
    chunk_index: int
    terms: Counter[str]
    vectors: Mapping[str, tuple[float, ...]]


class MemoryIndex(ExternalIndex):
    name = "memory"
    generations: dict[int, dict[int, tuple[int, list[Entry]]]]  # generation -> document -> (version, entries)
    deleted: dict[int, int]  # document -> deletion version

    def __init__(
        self,
        *,
        lane_timeout_ms: int = 2000,
        delay_seconds: float = 0.0,
        reachable: bool = True,
        **options: Any,
    ):
        super().__init__(**options)
        self.lane_timeout_ms, self.delay_seconds, self.reachable = lane_timeout_ms, delay_seconds, reachable
        self.generations, self.serving, self.deleted = {1: {}}, 1, {}

    # --- lanes --------------------------------------------------------------------------------------
    def _visible(self, scope: SearchScope) -> list[Entry]:
        self._stall()
        found = []
        for _, entries in self.generations[self.serving].values():
            for entry in entries:
                state = entry.state
                if state.tenant_id != scope.tenant_id or state.is_deleted:
                    continue
                if scope.connector_ids is not None and state.connector_id not in scope.connector_ids:
                    continue
                if scope.environment_id is not None and state.environment_id not in (
                    None,
                    scope.environment_id,
                ):
                    continue
                if not scope.bypass_acl and not set(state.acl_tokens) & scope.principal_tokens:
                    continue
                found.append(entry)
        return found

    def _stall(self) -> None:
        if not self.reachable:
            raise BackendUnavailable("the memory index is switched off")
        if self.delay_seconds * 1000 > self.lane_timeout_ms:
            time.sleep(self.lane_timeout_ms / 1000)
            raise LaneTimedOut(f"the memory index took longer than {self.lane_timeout_ms} ms")

    def vector_search(
        self,
        scope: SearchScope,
        query_embedding: Sequence[float],
        dimensions: int,
        limit: int,
        *,
        model: str | None = None,
        text_hits: int = 0,
    ) -> list[LaneHit]:
        if not vector_lane_can_match(scope, query_embedding, dimensions, limit):
            return []
        hits = []
        for entry in self._visible(scope):
            for name, vector in entry.vectors.items():
                if len(vector) == dimensions and (model is None or name == model):
                    hits.append(self._hit(entry, _cosine(query_embedding, vector)))
        return _best(hits, limit)

    def keyword_search(
        self, scope: SearchScope, query_text: str, languages: Sequence[str], limit: int, *, text_hits: int = 0
    ) -> list[LaneHit]:
        if not keyword_lane_can_match(scope, query_text, languages, limit):
            return []
        tenant = [e for e in self._all() if e.state.tenant_id == scope.tenant_id]  # statistics per tenant
        frequency = Counter(t for e in tenant for t in set(e.terms))
        average = sum(sum(e.terms.values()) for e in tenant) / max(len(tenant), 1)
        wanted = set(terms(query_text))
        hits = []
        for entry in self._visible(scope):
            score = sum(
                _bm25(entry, t, frequency[t], len(tenant), average) for t in wanted & set(entry.terms)
            )
            if score > 0:
                hits.append(self._hit(entry, score))
        return _best(hits, limit)

    def _all(self) -> list[Entry]:
        return [e for _, entries in self.generations[self.serving].values() for e in entries]

    @staticmethod
    def _hit(entry: Entry, score: float) -> LaneHit:
        return LaneHit(chunk_id=entry.chunk_id, document_id=entry.state.document_id,
                       chunk_index=entry.chunk_index, score=score)  # fmt: skip

    # --- writes -------------------------------------------------------------------------------------
    def sync_document_access(
        self, states: Sequence[DocumentState], generation: int | None = None
    ) -> dict[int, str]:
        self._stall()
        documents = self.generations[generation or self.serving]
        for state in states:
            held = documents.get(state.document_id, (0, []))[0]
            if state.version < max(held, self.deleted.get(state.document_id, 0)):
                continue  # a newer push or the deletion wins
            entries = [
                Entry(
                    state, c.chunk_id, c.chunk_index, Counter(terms(f"{state.title} {c.content}")), c.vectors
                )
                for c in state.chunks or ()
            ]
            documents[state.document_id] = (state.version, entries)
        return {}

    def sync_document_deletions(self, deletions: Mapping[int, int]) -> dict[int, str]:
        self._stall()
        for document_id, version in deletions.items():
            self.deleted[document_id] = max(version, self.deleted.get(document_id, 0))
            for documents in self.generations.values():
                documents.pop(document_id, None)
        return {}

    def start_index_generation(
        self, dimensions: Sequence[int], *, storages: Sequence[str] = ("vector",)
    ) -> int:
        generation = max(self.generations) + 1
        self.generations[generation] = {}
        return generation

    def activate_index_generation(self, generation: int) -> None:
        self.serving = generation
        self.generations = {generation: self.generations[generation]}

    def abandon_index_generation(self, generation: int) -> None:
        if generation != self.serving:
            self.generations.pop(generation, None)

    def indexed_chunks_per_tenant(self) -> dict[int, int]:
        return dict(Counter(e.state.tenant_id for e in self._all()))

    def health(self) -> None:
        if not self.reachable:
            raise BackendUnavailable("the memory index is switched off")


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0


def _bm25(
    entry: Entry, term: str, df: int, n: int, average: float, k1: float = 1.2, b: float = 0.75
) -> float:
    tf, length = entry.terms[term], sum(entry.terms.values())
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / (average or 1)))


def _best(hits: list[LaneHit], limit: int) -> list[LaneHit]:
    return sorted(hits, key=lambda h: (-h.score, h.chunk_id))[:limit]
