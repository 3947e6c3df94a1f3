"""The OpenSearch side of bench/search_latency.py: push the corpus, and the raw-query baselines."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any


def push_corpus() -> dict[str, float]:
    """Push every dirty document to the index; the push rate in documents and chunks per second."""
    from knowledge.models import Chunk
    from knowledge.services.index_sync import index_reconcile, index_status
    from retrieval_backends.registry import get_backend

    pending = index_status().dirty
    if not pending:
        return {"documents": 0, "seconds": 0.0, "chunks_per_second": 0.0}
    started = time.perf_counter()
    stats = index_reconcile(batch_size=500, time_budget=None)
    seconds = time.perf_counter() - started
    get_backend().refresh()  # type: ignore[attr-defined]
    chunks = Chunk.objects.count()
    return {
        "documents": stats.pushed,
        "seconds": round(seconds, 1),
        "chunks_per_second": round(chunks / seconds, 1),
    }


def wipe_indices() -> None:
    """Delete every index under the backend's prefix, and forget that the documents were pushed."""
    from knowledge.services.index_sync.reconcile import documents_mark_dirty

    client, names = _client_and_names()
    client.indices.delete(index=f"{names.prefix}-*", ignore=404)
    documents_mark_dirty()


def _client_and_names() -> tuple[Any, Any]:
    from retrieval_backends.registry import get_backend

    backend = get_backend()
    return backend.client, backend.names  # type: ignore[attr-defined]


def raw_vector(vector: Sequence[float], limit: int, dimensions: int) -> list[int]:
    """A k-NN query with no filter and no verification: what OpenSearch alone costs."""
    client, names = _client_and_names()
    body = {
        "size": limit,
        "_source": ["chunk_id"],
        "query": {"knn": {"vector": {"vector": list(vector), "k": limit}}},
    }
    response = client.search(index=names.vectors(dimensions), body=body)
    return [hit["_source"]["chunk_id"] for hit in response["hits"]["hits"]]


def raw_keyword(text: str, limit: int) -> list[int]:
    client, names = _client_and_names()
    body = {"size": limit, "_source": ["chunk_id"], "query": {"match": {"text_english": text}}}
    response = client.search(index=names.chunks, body=body)
    return [hit["_source"]["chunk_id"] for hit in response["hits"]["hits"]]
