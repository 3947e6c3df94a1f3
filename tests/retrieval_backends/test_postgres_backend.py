"""The PostgreSQL backend passes the shared contract suite."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from retrieval_backends.postgres import PostgresRetrievalBackend
from tests.contract.backend_contract import BackendContractTests

pytestmark = pytest.mark.django_db


class TestPostgresBackend(BackendContractTests):
    @pytest.fixture
    def backend(self) -> PostgresRetrievalBackend:
        return PostgresRetrievalBackend(lane_timeout_ms=5000, exact_scan_max_rows=15000)

    @pytest.fixture
    def timeout_error(self) -> BaseException:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET LOCAL statement_timeout = 10")
                cursor.execute("SELECT pg_sleep(1)")
        except DatabaseError as exc:
            return exc
        raise AssertionError("pg_sleep was not cancelled")


def test_hnsw_path_also_honours_filters() -> None:
    """With exact scans disabled the iterative HNSW path must still filter inside the query."""
    from tests.contract.corpus import DIM, basis, build_corpus

    backend = PostgresRetrievalBackend(exact_scan_max_rows=0)
    corpus = build_corpus(backend)
    hits = backend.vector_search(corpus.bob_scope(), basis(1), DIM, 10)
    assert {h.document_id for h in hits} == {corpus.docs[k].pk for k in ("public", "staging", "second")}
