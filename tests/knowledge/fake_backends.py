"""Test backends: a forging external index and lanes that time out or fail, on top of the real one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from django.db import DatabaseError, connection, transaction

from retrieval_backends.base import BackendUnavailable, ExternalIndex, LaneTimedOut
from retrieval_backends.postgres import PostgresRetrievalBackend
from retrieval_backends.types import LaneHit, SearchScope


class ForgingBackend(ExternalIndex):
    """An external index that returns whatever `forged` holds, ignoring the scope; pushes vanish."""

    forged: ClassVar[list[LaneHit]] = []

    def vector_search(self, scope: SearchScope, *args: Any, **kwargs: Any) -> list[LaneHit]:
        return list(self.forged)

    def keyword_search(self, scope: SearchScope, *args: Any, **kwargs: Any) -> list[LaneHit]:
        return list(self.forged)

    def sync_document_access(self, states: Sequence[Any], generation: int | None = None) -> dict[int, str]:
        return {}

    def sync_document_deletions(self, deletions: Mapping[int, int]) -> dict[int, str]:
        return {}

    def health(self) -> None:
        pass


class SlowKeywordBackend(PostgresRetrievalBackend):
    """The keyword lane hits PostgreSQL's statement timeout for real (and says so as the contract asks)."""

    def keyword_search(
        self, scope: SearchScope, query_text: str, languages: Sequence[str], limit: int, *, text_hits: int = 0
    ) -> list[LaneHit]:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET LOCAL statement_timeout = 10")
                cursor.execute("SELECT pg_sleep(1)")
        except DatabaseError as exc:
            raise LaneTimedOut(f"the keyword lane timed out: {exc}") from exc
        return []


class SlowLanesBackend(SlowKeywordBackend):
    """Both lanes hit PostgreSQL's statement timeout for real."""

    def vector_search(self, scope: SearchScope, *args: Any, **kwargs: Any) -> list[LaneHit]:
        return self.keyword_search(scope, "", (), 1)


class BrokenKeywordBackend(PostgresRetrievalBackend):
    def keyword_search(
        self, scope: SearchScope, query_text: str, languages: Sequence[str], limit: int, *, text_hits: int = 0
    ) -> list[LaneHit]:
        raise RuntimeError("keyword lane exploded")


class RecordingIndexBackend(PostgresRetrievalBackend, ExternalIndex):
    """An external-index stand-in: PostgreSQL's lanes, and sync hooks that record what they were told
    and fail on command. `unavailable = True` makes every hook raise BackendUnavailable; ids in
    `failing` come back as per-document failures.
    """

    states: ClassVar[dict[int, Any]] = {}
    deleted: ClassVar[set[int]] = set()
    pushes: ClassVar[Counter[int]] = Counter()
    unavailable: ClassVar[bool] = False
    failing: ClassVar[set[int]] = set()

    @classmethod
    def reset(cls) -> None:
        cls.states.clear()
        cls.deleted.clear()
        cls.pushes.clear()
        cls.unavailable = False
        cls.failing.clear()

    def sync_document_access(self, states: Sequence[Any], generation: int | None = None) -> dict[int, str]:
        if self.unavailable:
            raise BackendUnavailable("index down (on command)")
        failed = {}
        for state in states:
            if state.document_id in self.failing:
                failed[state.document_id] = "mapping rejected (on command)"
                continue
            self.states[state.document_id] = state
            self.pushes[state.document_id] += 1
            self.deleted.discard(state.document_id)
        return failed

    def sync_document_deletions(self, deletions: Mapping[int, int]) -> dict[int, str]:
        if self.unavailable:
            raise BackendUnavailable("index down (on command)")
        for document_id in deletions:
            self.states.pop(document_id, None)
            self.deleted.add(document_id)
        return {}

    def start_index_generation(
        self, dimensions: Sequence[int], *, storages: Sequence[str] = ("vector",)
    ) -> int:
        return 1

    def activate_index_generation(self, generation: int) -> None:
        pass

    def abandon_index_generation(self, generation: int) -> None:
        pass

    def indexed_chunks_per_tenant(self) -> dict[int, int]:
        counts: Counter[int] = Counter()
        for state in self.states.values():
            counts[state.tenant_id] += len(state.chunks or ())
        return dict(counts)
