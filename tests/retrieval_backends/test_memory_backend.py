"""A third backend, a toy in-memory index, passes the contract suite and serves the whole application
with no change to any caller: searches, ACL changes, deletions and a rebuild go through it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings

from knowledge.search import search_chunks
from knowledge.services.documents import document_hard_delete, document_set_acl, document_upsert
from knowledge.services.index_sync import index_reconcile
from knowledge.services.index_sync.rebuild import index_rebuild
from retrieval_backends.registry import get_backend, reset_backend
from retrieval_backends.testing import ExternalBackendContract
from retrieval_backends.types import SearchScope
from tests.factories import ConnectorFactory, PrincipalFactory
from tests.retrieval_backends.memory_backend import MemoryIndex

pytestmark = pytest.mark.django_db
MEMORY = "tests.retrieval_backends.memory_backend.MemoryIndex"


class TestMemoryIndex(ExternalBackendContract):
    @pytest.fixture
    def backend(self) -> MemoryIndex:
        return MemoryIndex()

    @pytest.fixture
    def slow_backend(self) -> MemoryIndex:
        return MemoryIndex(lane_timeout_ms=50, delay_seconds=1)

    @pytest.fixture
    def unreachable_backend(self) -> MemoryIndex:
        return MemoryIndex(reachable=False)


@pytest.fixture
def serving() -> Iterator[MemoryIndex]:
    with override_settings(RETRIEVAL_BACKEND=MEMORY):
        reset_backend()
        backend = get_backend()
        assert isinstance(backend, MemoryIndex)
        yield backend
    reset_backend()


def titles(scope: SearchScope, query: str) -> list[str]:
    return [h.title for h in search_chunks(scope=scope, query_text=query, limit=5).hits]


def test_the_application_runs_on_it_unchanged(serving: MemoryIndex) -> None:
    connector = ConnectorFactory.create()
    erin = PrincipalFactory.create(tenant=connector.tenant)
    public = SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))
    as_erin = SearchScope(
        tenant_id=connector.tenant_id, principal_tokens=frozenset({"public", erin.acl_token})
    )
    memo = document_upsert(connector=connector, external_id="m", title="Ferry memo",
                           content="the ferry timetable changes in May", is_public=True).document  # fmt: skip
    document_upsert(connector=connector, external_id="o", title="Other", content="lunch menu", is_public=True)
    index_reconcile(time_budget=None)
    assert titles(public, "ferry timetable")[0] == "Ferry memo"
    document_set_acl(document=memo, is_public=False, principals=[erin])
    index_reconcile(time_budget=None)
    assert "Ferry memo" not in titles(public, "ferry timetable")
    assert titles(as_erin, "ferry timetable")[0] == "Ferry memo"
    assert index_rebuild().documents == 2 and titles(as_erin, "ferry timetable")[0] == "Ferry memo"
    document_hard_delete(document_id=memo.pk)
    index_reconcile(time_budget=None)
    assert "Ferry memo" not in titles(as_erin, "ferry timetable")
    assert serving.indexed_chunks_per_tenant() == {connector.tenant_id: 1}
