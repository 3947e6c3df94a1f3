"""The OpenSearch backend passes the shared contract suite on the real node, and its own checks."""

from __future__ import annotations

import pytest
from opensearchpy import OpenSearch

from retrieval_backends.opensearch import OpenSearchRetrievalBackend
from tests.contract.backend_contract import BackendContractTests
from tests.opensearch import URL, opensearch_backend, settle

__all__ = ["opensearch_backend"]  # the fixture

pytestmark = [pytest.mark.django_db, pytest.mark.opensearch]


class TestOpenSearchBackend(BackendContractTests):
    def settle(self, backend: object) -> None:
        assert isinstance(backend, OpenSearchRetrievalBackend)
        settle(backend)

    @pytest.fixture
    def backend(self, opensearch_backend: OpenSearchRetrievalBackend) -> OpenSearchRetrievalBackend:
        return opensearch_backend

    @pytest.fixture
    def timeout_error(self, opensearch_backend: OpenSearchRetrievalBackend) -> BaseException:
        """A real client timeout against the real node (a 1 ms request timeout)."""
        client = OpenSearch([URL], timeout=0.001, max_retries=0)
        try:
            client.search(index="_all", body={"query": {"match_all": {}}})
        except Exception as exc:
            return exc
        raise AssertionError("a 1 ms request did not time out")
