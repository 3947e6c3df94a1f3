"""A two-node OpenSearch cluster on loopback: one node down keeps search and writes going, nothing lost.

Starts node-2 with `scripts/opensearch.sh up --nodes 2`, stops and restarts it. Slow (two JVMs), so
it runs only with OPENSEARCH_CLUSTER_TESTS=1.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from opensearchpy import OpenSearch

from knowledge.search import search_chunks
from knowledge.services.documents import document_set_acl, document_upsert
from knowledge.services.index_sync import index_reconcile, index_status
from retrieval_backends.opensearch import OpenSearchRetrievalBackend
from retrieval_backends.types import SearchScope
from tests.factories import ConnectorFactory, PrincipalFactory
from tests.opensearch import URL, indexed_documents, opensearch_backend

__all__ = ["opensearch_backend"]
pytestmark = [
    pytest.mark.django_db,
    pytest.mark.opensearch,
    pytest.mark.skipif(
        os.environ.get("OPENSEARCH_CLUSTER_TESTS") != "1", reason="set OPENSEARCH_CLUSTER_TESTS=1"
    ),
]
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "opensearch.sh"


def health(status: str, nodes: int, timeout: float = 180) -> None:
    """Wait for the status (`serving`: yellow or green) with this many nodes."""
    client, deadline = OpenSearch([URL]), time.monotonic() + timeout
    wanted = {"yellow", "green"} if status == "serving" else {status}
    while time.monotonic() < deadline:
        found = client.cluster.health()
        if found["status"] in wanted and found["number_of_nodes"] == nodes:
            return
        time.sleep(1)
    raise AssertionError(f"the cluster did not become {status} with {nodes} nodes: {client.cluster.health()}")


@pytest.fixture
def cluster() -> Iterator[None]:
    subprocess.run([str(SCRIPT), "up", "--nodes", "2"], check=True, capture_output=True)
    yield
    subprocess.run([str(SCRIPT), "down", "--node", "2"], check=True, capture_output=True)
    health("green", 1)


def test_one_node_down_then_back_loses_nothing(
    cluster: None, opensearch_backend: OpenSearchRetrievalBackend
) -> None:
    backend = opensearch_backend
    connector = ConnectorFactory.create()
    user = PrincipalFactory.create(tenant=connector.tenant)
    docs = [
        document_upsert(
            connector=connector, external_id=f"d{i}", content=f"ferry timetable {i}", is_public=True
        ).document
        for i in range(20)
    ]
    index_reconcile(time_budget=None)
    health("green", 2)  # every shard has its replica on the other node
    settings = backend.client.indices.get_settings(index=backend.names.chunks)
    assert next(iter(settings.values()))["settings"]["index"]["number_of_replicas"] == "1"

    subprocess.run([str(SCRIPT), "down", "--node", "2"], check=True, capture_output=True)
    # The replicas on the lost node are gone: yellow, or green again once auto-expand drops them.
    health("serving", 1)
    scope = SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))
    found = search_chunks(scope=scope, query_text="ferry timetable", limit=50, lanes=("keyword",))
    assert len(found.hits) == 20  # searches still answer
    for document in docs[:5]:
        document_set_acl(document=document, is_public=False, principals=[user])
    document_upsert(connector=connector, external_id="late", content="ferry timetable late", is_public=True)
    for _ in range(30):  # writes retry (a shard may be failing over) or wait in the change log
        try:
            index_reconcile(time_budget=None)
        except Exception:  # BackendUnavailable while primaries move
            time.sleep(1)
        if not index_status().pending:
            break
    assert not index_status().pending

    subprocess.run([str(SCRIPT), "up", "--nodes", "2"], check=True, capture_output=True)
    health("green", 2)
    backend.refresh()
    assert len(indexed_documents(backend)) == 21
    found = search_chunks(scope=scope, query_text="ferry timetable", limit=50, lanes=("keyword",))
    assert {h.document_id for h in found.hits}.isdisjoint({d.pk for d in docs[:5]}) and len(found.hits) == 16
