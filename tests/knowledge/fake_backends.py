"""Test backends: a forging external index and lanes that time out or fail, on top of the real one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from django.db import connection, transaction

from retrieval_backends.base import BackendUnavailable
from retrieval_backends.postgres import PostgresRetrievalBackend
from retrieval_backends.types import LaneHit, SearchScope


class ForgingBackend(PostgresRetrievalBackend):
    """Pretends to be an external index that returns whatever `forged` holds, ignoring the scope."""

    requires_result_verification = True
    forged: ClassVar[list[LaneHit]] = []

    def vector_search(self, scope: SearchScope, *args: Any, **kwargs: Any) -> list[LaneHit]:
        return list(self.forged)

    def keyword_search(self, scope: SearchScope, *args: Any, **kwargs: Any) -> list[LaneHit]:
        return list(self.forged)


class SlowKeywordBackend(PostgresRetrievalBackend):
    """The keyword lane hits PostgreSQL's statement timeout for real."""

    def keyword_search(
        self, scope: SearchScope, query_text: str, languages: Sequence[str], limit: int, *, text_hits: int = 0
    ) -> list[LaneHit]:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL statement_timeout = 10")
            cursor.execute("SELECT pg_sleep(1)")
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


class RecordingIndexBackend(PostgresRetrievalBackend):
    """An external-index stand-in that records what the sync hooks were told, and fails on command.

    `unavailable = True` makes every hook raise BackendUnavailable; ids in `failing` come back as
    per-document failures.
    """

    requires_index_sync = True
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
