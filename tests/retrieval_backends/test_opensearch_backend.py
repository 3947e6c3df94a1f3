"""The OpenSearch backend passes the contract suite (retrieval_backends.testing) on the real node."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from retrieval_backends.opensearch import OpenSearchRetrievalBackend
from retrieval_backends.testing import ExternalBackendContract
from tests.api.test_outages import closed_port
from tests.opensearch import opensearch_backend

__all__ = ["opensearch_backend"]  # the fixture

pytestmark = [pytest.mark.django_db, pytest.mark.opensearch]


class TestOpenSearchBackend(ExternalBackendContract):
    @pytest.fixture
    def backend(self, opensearch_backend: OpenSearchRetrievalBackend) -> OpenSearchRetrievalBackend:
        return opensearch_backend

    @pytest.fixture
    def slow_backend(self) -> Iterator[OpenSearchRetrievalBackend]:
        """A node that accepts connections and never answers: a stalled node, deterministically (a
        short timeout against a real node is not: a fast node answers in time)."""
        with socket.create_server(("127.0.0.1", 0)) as silent:
            url = f"http://127.0.0.1:{silent.getsockname()[1]}"
            yield OpenSearchRetrievalBackend(url=url, lane_timeout_ms=200, index_prefix="silent")

    @pytest.fixture
    def unreachable_backend(self) -> OpenSearchRetrievalBackend:
        return OpenSearchRetrievalBackend(url=f"http://127.0.0.1:{closed_port()}", index_prefix="nowhere")
