"""The PostgreSQL backend passes the contract suite (retrieval_backends.testing)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from django.db import connection, transaction

from knowledge.services.vector_indexes import vector_indexes_maintain
from knowledge.store.tables import CHUNK, EMBEDDING
from retrieval_backends.postgres import PostgresRetrievalBackend
from retrieval_backends.testing import DIM, BackendContract, basis, build_corpus
from tests.api.test_outages import closed_port

pytestmark = pytest.mark.django_db


class TestPostgresBackend(BackendContract):
    @pytest.fixture
    def backend(self) -> PostgresRetrievalBackend:
        return PostgresRetrievalBackend(lane_timeout_ms=5000, exact_scan_max_rows=15000)

    @pytest.fixture
    def slow_backend(self) -> Iterator[PostgresRetrievalBackend]:
        """Another session holds the search tables locked, so every lane statement waits past its budget."""
        locked, release = threading.Event(), threading.Event()

        def hold() -> None:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(f"LOCK TABLE {CHUNK}, {EMBEDDING} IN ACCESS EXCLUSIVE MODE")
                locked.set()
                release.wait(30)
            connection.close()

        holder = threading.Thread(target=hold)
        holder.start()
        assert locked.wait(30)
        yield PostgresRetrievalBackend(lane_timeout_ms=200)
        release.set()
        holder.join(30)

    @pytest.fixture
    def unreachable_backend(self) -> Iterator[PostgresRetrievalBackend]:
        """The database itself is down (the driver connects to a port where nothing listens)."""
        saved = connection.settings_dict["PORT"]
        connection.close()
        connection.settings_dict["PORT"] = str(closed_port())
        yield PostgresRetrievalBackend()
        connection.close()
        connection.settings_dict["PORT"] = saved


def test_hnsw_path_also_honours_filters() -> None:
    """With exact scans disabled the iterative HNSW path must still filter inside the query."""
    backend = PostgresRetrievalBackend(exact_scan_max_rows=0)
    corpus = build_corpus(backend)
    vector_indexes_maintain(min_vectors=0)  # every tenant's vectors get a graph of their own
    hits = backend.vector_search(corpus.bob_scope(), basis(1), DIM, 10)
    assert {h.document_id for h in hits} == {corpus.docs[k].pk for k in ("public", "staging", "second")}
