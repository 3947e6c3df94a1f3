"""The vector lane's visibility estimates hold in a database that tenants share.

The planner multiplies the selectivity of `tenant_id = T` by that of `acl_tokens && tokens` over the
whole table, so a small tenant's public scope came out at a few percent of its rows (and its vector
searches took the exact path over every one of them). The estimates now come from extended
statistics (migration 0019): a tenant's models and connectors jointly, its ACLs from their MCV list.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.db import connection

from knowledge.models import Chunk, ChunkEmbedding, Document
from knowledge.services.vector_indexes import vector_indexes_maintain
from knowledge.store.search import vector
from knowledge.store.search.visibility import acl_share, estimate_visibility
from retrieval_backends.postgres import PostgresRetrievalBackend
from retrieval_backends.types import SearchScope
from tests.factories import DocumentFactory

pytestmark = pytest.mark.django_db
DIM, MODEL = 384, "visibility-test"
BIG, SMALL = 600, 120  # rows of the big tenant and of the small one


def load(document: Document, rows: int, tokens: Any, rng: random.Random) -> None:
    """`rows` chunks with vectors; `tokens(i)` is the ACL of the i-th."""
    chunks = Chunk.objects.bulk_create(
        Chunk(
            document=document,
            chunk_index=i,
            content=f"chunk {i}",
            tenant_id=document.tenant_id,
            connector_id=document.connector_id,
            acl_tokens=tokens(i),
        )
        for i in range(rows)
    )
    ChunkEmbedding.objects.bulk_create(
        ChunkEmbedding(
            chunk=chunk,
            model=MODEL,
            dimensions=DIM,
            embedding=[rng.gauss(0, 1) for _ in range(DIM)],
            tenant_id=chunk.tenant_id,
            connector_id=chunk.connector_id,
            acl_tokens=chunk.acl_tokens,
        )
        for chunk in chunks
    )


@pytest.fixture
def shared() -> dict[str, SearchScope]:
    """A big tenant (90 % of its rows for group a, 10 % for group b) and a small public one, analyzed."""
    rng = random.Random(3)
    big, small = DocumentFactory.create(), DocumentFactory.create()
    load(big, BIG, lambda i: ["g:a", "g:b"] if i % 10 == 0 else ["g:a"], rng)
    load(small, SMALL, lambda i: ["public"], rng)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE knowledge_chunkembedding")
    return {
        "big, group a": SearchScope(tenant_id=big.tenant_id, principal_tokens=frozenset({"g:a"})),
        "big, group b only": SearchScope(tenant_id=big.tenant_id, principal_tokens=frozenset({"g:b", "u:x"})),
        "small, public": SearchScope(tenant_id=small.tenant_id, principal_tokens=frozenset({"public"})),
        "small, bypassing ACLs": SearchScope(tenant_id=small.tenant_id, bypass_acl=True),
    }


@pytest.mark.parametrize(
    ("name", "rows", "fraction"),
    [
        ("big, group a", BIG, 1.0),
        ("big, group b only", BIG / 10, 0.1),
        ("small, public", SMALL, 1.0),
        ("small, bypassing ACLs", SMALL, 1.0),
    ],
)
def test_estimates_follow_each_tenants_own_acls(
    shared: dict[str, SearchScope], name: str, rows: float, fraction: float
) -> None:
    seen = estimate_visibility(shared[name], DIM, MODEL, timeout_ms=5000)
    assert rows / 1.5 <= seen.rows <= rows * 1.5
    assert fraction / 1.5 <= seen.fraction <= min(1.0, fraction * 1.5)


def test_the_small_tenants_public_scope_walks_its_own_graph_as_a_fully_visible_one(
    shared: dict[str, SearchScope], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With 100 rows as the exact-scan limit, its 120 visible rows go to its own HNSW graph with
    ef_search 2 x limit (the planner's own estimate, 120 x 1/6, took the exact path); before the
    tenant has a graph of its own, they are ranked exactly."""
    calls: list[dict[str, Any]] = []
    real = vector.lane_fetch

    def spy(timeout_ms: int, statements: Any, **gucs: Any) -> Any:
        calls.append(gucs)
        return real(timeout_ms, statements, **gucs)

    monkeypatch.setattr(vector, "lane_fetch", spy)
    backend = PostgresRetrievalBackend(exact_scan_max_rows=100)
    query = [random.Random(5).gauss(0, 1) for _ in range(DIM)]
    exact = backend.vector_search(shared["small, public"], query, DIM, 10, model=MODEL)
    assert [g.get("hnsw.ef_search") for g in calls if "jit" in g] == [None]
    calls.clear()
    assert vector_indexes_maintain(min_vectors=100).created  # both tenants now have their own
    hits = backend.vector_search(shared["small, public"], query, DIM, 10, model=MODEL)
    assert len(hits) == 10 and len({h.chunk_id for h in hits} & {h.chunk_id for h in exact}) >= 8
    assert [g.get("hnsw.ef_search") for g in calls if "jit" in g] == [vector.MIN_EF_SEARCH]


def test_the_planners_estimate_stands_where_the_sampled_acls_do_not_describe_the_tenant() -> None:
    # (visible share, sampled share of the table, table rows) of the tenant's MCV items
    assert acl_share((0.01, 0.02, 10_000.0), 100.0, planner=0.3) == pytest.approx(0.5)
    assert acl_share((0.0, 0.02, 10_000.0), 100.0, planner=0.3) == 0.0
    assert acl_share((0.01, 0.02, 10_000.0), 1000.0, planner=0.3) == 0.3  # 200 of 1,000 rows described
    assert acl_share((0, 0, 10_000.0), 100.0, planner=0.3) == 0.3  # not in the list
    assert acl_share((None, None, None), 100.0, planner=0.3) == 0.3  # never analyzed
