"""The OpenSearch backend passes the shared contract suite on the real node, and its own checks."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from opensearchpy import OpenSearch

from retrieval_backends.opensearch import OpenSearchRetrievalBackend
from tests.contract.backend_contract import BackendContractTests
from tests.opensearch import opensearch_backend, settle

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
    def timeout_error(self) -> Iterator[BaseException]:
        """The real client's timeout, raised deterministically.

        A 1 ms timeout against the node is not reliable (a fast node answers in time), so the client
        talks to a socket that accepts the connection and never answers: the same read timeout a
        stalled node gives.
        """
        with socket.create_server(("127.0.0.1", 0)) as silent:
            port = silent.getsockname()[1]
            client = OpenSearch([f"http://127.0.0.1:{port}"], timeout=0.2, max_retries=0)
            try:
                client.search(index="_all", body={"query": {"match_all": {}}})
            except Exception as exc:
                yield exc
                return
        raise AssertionError("a request to a silent node did not time out")
