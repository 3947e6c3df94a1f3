"""The OpenSearch backend on the real node, with indices of its own per test (deleted afterwards)."""

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

URL = os.environ.get("OPENSEARCH_URL", "http://127.0.0.1:9200")
BACKEND = "retrieval_backends.opensearch.OpenSearchRetrievalBackend"


def node_or_skip() -> None:
    try:
        OpenSearch([URL], timeout=3).cluster.health()
    except OSConnectionError:
        if os.environ.get("OPENSEARCH_REQUIRED", "0") not in ("", "0"):
            raise
        pytest.skip(f"no OpenSearch node at {URL} (scripts/opensearch.sh up)")


def backend_config(prefix: str, **options: object) -> dict[str, object]:
    return {
        "CLASS": BACKEND,
        "OPTIONS": {"url": URL, "index_prefix": prefix, "lane_timeout_ms": 5000, **options},
    }


@pytest.fixture
def opensearch_backend() -> Iterator[OpenSearchRetrievalBackend]:
    """The deployment's backend set to OpenSearch under a fresh index prefix."""
    node_or_skip()
    prefix = f"test-{uuid.uuid4().hex[:10]}"
    with override_settings(RETRIEVAL_BACKEND=backend_config(prefix)):
        reset_backend()
        backend = get_backend()
        assert isinstance(backend, OpenSearchRetrievalBackend)
        yield backend
        backend.client.indices.delete(index=f"{prefix}-*", ignore=404)
    reset_backend()


def settle(backend: OpenSearchRetrievalBackend | None = None) -> None:
    """Push everything pending and make it searchable."""
    backend = backend or get_backend()  # type: ignore[assignment]
    assert isinstance(backend, OpenSearchRetrievalBackend)
    index_reconcile(time_budget=None)
    backend.refresh()


def indexed_documents(backend: OpenSearchRetrievalBackend) -> dict[int, int]:
    """document id -> chunks the index holds for it."""
    backend.refresh()
    body = {"size": 0, "aggs": {"docs": {"terms": {"field": "document_id", "size": 10000}}}}
    response = backend.client.search(index=backend.names.chunks, body=body)
    return {int(b["key"]): int(b["doc_count"]) for b in response["aggregations"]["docs"]["buckets"]}
