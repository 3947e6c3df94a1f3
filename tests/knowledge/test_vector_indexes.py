"""Per-tenant HNSW indexes: which tenants get one, that the lane walks only its own tenant's graph,
that builds run beside writes, and that broken or unneeded ones go."""

from __future__ import annotations

import io
import random
import threading
import time
from collections.abc import Callable

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from knowledge.models import Chunk, ChunkEmbedding, Document
from knowledge.services.vector_indexes import (
    serving_threshold,
    vector_index_plan,
    vector_indexes_maintain,
)
from knowledge.store import vector_indexes as store
from knowledge.store.lookup_cache import LookupCache
from knowledge.store.search import vector
from knowledge.store.search.visibility import candidate_where
from knowledge.store.sql import lane_settings, vector_literal
from knowledge.tasks import maintain_vector_indexes
from retrieval_backends.postgres import PostgresRetrievalBackend
from retrieval_backends.types import SearchScope
from tests.factories import DocumentFactory

DIM, MODEL = 16, "index-test"


def load(
    document: Document, rows: int, rng: random.Random, *, dims: int = DIM, model: str = MODEL
) -> list[int]:
    """`rows` public chunks of `document` with random vectors; their chunk ids."""
    start = Chunk.objects.filter(document=document).count()
    chunks = Chunk.objects.bulk_create(
        Chunk(
            document=document,
            chunk_index=start + i,
            content=f"chunk {i}",
            tenant_id=document.tenant_id,
            connector_id=document.connector_id,
            acl_tokens=["public"],
        )  # fmt: skip
        for i in range(rows)
    )
    half = model.endswith("@halfvec")
    ChunkEmbedding.objects.bulk_create(
        ChunkEmbedding(
            chunk=c,
            model=model,
            dimensions=dims,
            tenant_id=c.tenant_id,
            connector_id=c.connector_id,
            acl_tokens=c.acl_tokens,
            **{"embedding_half" if half else "embedding": [rng.gauss(0, 1) for _ in range(dims)]},
        )  # fmt: skip
        for c in chunks
    )
    return [c.pk for c in chunks]


def public(document: Document) -> SearchScope:
    return SearchScope(tenant_id=document.tenant_id, principal_tokens=frozenset({"public"}))


def plan_text(scope: SearchScope, dims: int = DIM, storage: str = "vector") -> str:
    """EXPLAIN of the lane's HNSW statement for this scope, under the lane's settings."""
    where, params = candidate_where(scope, dims, MODEL if storage == "vector" else MODEL + "@halfvec")
    sql = vector._hnsw_sql(where, dims, storage)
    with lane_settings(5000, **vector.hnsw_settings(10, 1.0)) as cursor:
        cursor.execute("EXPLAIN " + sql, [vector_literal([0.1] * dims), *params, 10, 0])
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.django_db
def test_only_tenants_past_the_threshold_get_a_graph_and_the_lane_walks_only_their_own() -> None:
    rng = random.Random(1)
    big, other_big, small = (DocumentFactory.create() for _ in range(3))
    load(big, 120, rng)
    load(other_big, 90, rng)
    load(small, 30, rng)
    plan = vector_index_plan(min_vectors=50)
    assert [(s.tenant_id, rows) for s, rows in plan.create] == [
        (big.tenant_id, 120),
        (other_big.tenant_id, 90),
    ]
    report = vector_indexes_maintain(min_vectors=50)
    assert sorted(report.created) == sorted(
        store.VectorSpace(d.tenant_id, DIM).index_name for d in (big, other_big)
    )
    assert vector_index_plan(min_vectors=50).create == []  # nothing more to do
    own = store.VectorSpace(big.tenant_id, DIM).index_name
    explained = plan_text(public(big))
    assert own in explained and store.VectorSpace(other_big.tenant_id, DIM).index_name not in explained
    # The lane takes the graph only for tenants that have one; the small tenant is ranked exactly.
    backend = PostgresRetrievalBackend(exact_scan_max_rows=20)
    query = [rng.gauss(0, 1) for _ in range(DIM)]
    assert len(backend.vector_search(public(big), query, DIM, 10, model=MODEL)) == 10
    truth = ChunkEmbedding.objects.filter(tenant_id=small.tenant_id).count()
    assert len(backend.vector_search(public(small), query, DIM, 100, model=MODEL)) == truth


@pytest.mark.django_db
def test_a_shrunk_tenant_keeps_its_graph_down_to_half_the_threshold_then_loses_it() -> None:
    document = DocumentFactory.create()
    ids = load(document, 120, random.Random(2))
    vector_indexes_maintain(min_vectors=100)
    name = store.VectorSpace(document.tenant_id, DIM).index_name
    ChunkEmbedding.objects.filter(chunk_id__in=ids[:60]).delete()  # 60 left: above half of 100
    assert vector_indexes_maintain(min_vectors=100).dropped == [] and name in store.tenant_indexes()
    ChunkEmbedding.objects.filter(chunk_id__in=ids[60:80]).delete()  # 40 left
    assert vector_indexes_maintain(min_vectors=100).dropped == [name]
    assert name not in store.tenant_indexes()


@pytest.mark.django_db
def test_an_invalid_index_is_dropped_and_built_again_and_an_orphan_goes() -> None:
    kept, gone = DocumentFactory.create(), DocumentFactory.create()
    load(kept, 60, random.Random(3))
    load(gone, 60, random.Random(4))
    vector_indexes_maintain(min_vectors=50)
    name = store.VectorSpace(kept.tenant_id, DIM).index_name
    with connection.cursor() as cursor:  # what a failed CREATE INDEX CONCURRENTLY leaves behind
        cursor.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", [name])
    assert not store.tenant_indexes()[name].valid
    assert store.VectorSpace(kept.tenant_id, DIM) not in store.valid_spaces()
    gone.tenant.delete()  # its rows go; its index would stay behind
    report = vector_indexes_maintain(min_vectors=50)
    assert sorted(report.dropped) == sorted([name, store.VectorSpace(gone.tenant_id, DIM).index_name])
    assert report.created == [name] and store.tenant_indexes()[name].valid


@pytest.mark.django_db
def test_halfvec_vectors_get_a_halfvec_graph_and_unindexable_dimensions_none() -> None:
    document = DocumentFactory.create()
    load(document, 40, random.Random(5), model=MODEL + "@halfvec")
    load(document, 40, random.Random(6), dims=2500)  # past pgvector's 2,000 for vector HNSW
    report = vector_indexes_maintain(min_vectors=30)
    half = store.VectorSpace(document.tenant_id, DIM, "halfvec")
    assert report.created == [half.index_name] and half.index_name.endswith("_half")
    assert half.index_name in plan_text(public(document), storage="halfvec")
    hits = PostgresRetrievalBackend(exact_scan_max_rows=10).vector_search(
        public(document), [0.5] * DIM, DIM, 5, model=MODEL + "@halfvec"
    )
    assert len(hits) == 5


@pytest.mark.django_db(transaction=True)
def test_a_build_runs_concurrently_beside_writes_and_covers_them() -> None:
    """CREATE INDEX CONCURRENTLY waits for a writer that was already open, and meanwhile other writes
    to the same tenant go on; once the writer commits, the graph is built and holds every row."""
    rng = random.Random(7)
    document = DocumentFactory.create()
    load(document, 60, rng)
    opened, release = threading.Event(), threading.Event()

    def long_writer() -> None:
        with transaction.atomic():
            load(document, 1, rng)
            opened.set()
            release.wait(30)
        connection.close()

    writer = threading.Thread(target=long_writer)
    writer.start()
    assert opened.wait(30)
    build = _in_thread(lambda: vector_indexes_maintain(min_vectors=50))
    time.sleep(0.5)
    assert build.is_alive(), "the build should wait for the open writer"
    started = time.monotonic()
    neighbour = DocumentFactory.create(tenant=document.tenant, connector=document.connector)
    written = _in_thread(lambda: load(neighbour, 5, rng))
    written.join(10)
    assert not written.is_alive() and time.monotonic() - started < 10, "a write waited for the build"
    assert build.is_alive()
    release.set()
    writer.join(30)
    build.join(60)
    name = store.VectorSpace(document.tenant_id, DIM).index_name
    assert store.tenant_indexes()[name].valid
    LookupCache.written_everywhere()
    total = ChunkEmbedding.objects.filter(tenant_id=document.tenant_id).count()
    assert total == 66
    hits = PostgresRetrievalBackend(exact_scan_max_rows=10).vector_search(
        public(document), [0.1] * DIM, DIM, total, model=MODEL
    )
    assert len(hits) == total


def _in_thread(work: Callable[[], object]) -> threading.Thread:
    def run() -> None:
        try:
            work()
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.mark.django_db
def test_the_task_follows_the_serving_backend_and_the_command_reports(settings: object) -> None:
    document = DocumentFactory.create()
    load(document, 30, random.Random(8))
    assert serving_threshold() == 5000
    assert maintain_vector_indexes() == {"created": [], "dropped": [], "failed": {}, "skipped": False}
    out = io.StringIO()
    call_command("vector_indexes", "--apply", "--min-vectors", "20", stdout=out)
    name = store.VectorSpace(document.tenant_id, DIM).index_name
    assert "built 1 in" in out.getvalue() and "ready" in out.getvalue()
    assert name in store.tenant_indexes()
