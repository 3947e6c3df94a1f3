"""The OpenSearch backend passes the shared contract suite on the real node, and its own checks."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from django.test import override_settings
from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConnectionError as OSConnectionError

from knowledge.services.index_sync import index_reconcile
from retrieval_backends.opensearch import OpenSearchRetrievalBackend
from retrieval_backends.registry import get_backend, reset_backend
from tests.contract.backend_contract import BackendContractTests

pytestmark = [pytest.mark.django_db, pytest.mark.opensearch]
URL = os.environ.get("OPENSEARCH_URL", "http://127.0.0.1:9200")


def node_or_skip() -> None:
    try:
        OpenSearch([URL], timeout=3).cluster.health()
    except OSConnectionError:
        if os.environ.get("OPENSEARCH_REQUIRED", "0") not in ("", "0"):
            raise
        pytest.skip(f"no OpenSearch node at {URL} (scripts/opensearch.sh up)")


@pytest.fixture
def opensearch_backend() -> Iterator[OpenSearchRetrievalBackend]:
    """The deployment's backend set to OpenSearch, with indices of its own (deleted afterwards)."""
    node_or_skip()
    prefix = f"test-{uuid.uuid4().hex[:10]}"
    options = {"url": URL, "index_prefix": prefix, "lane_timeout_ms": 5000}
    config = {"BACKEND": "retrieval_backends.opensearch.OpenSearchRetrievalBackend", "OPTIONS": options}
    with override_settings(RETRIEVAL_BACKEND=config):
        reset_backend()
        backend = get_backend()
        assert isinstance(backend, OpenSearchRetrievalBackend)
        yield backend
        backend.client.indices.delete(index=f"{prefix}-*", ignore=404)
    reset_backend()


def settle(backend: OpenSearchRetrievalBackend) -> None:
    index_reconcile(time_budget=None)
    backend.refresh()


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
