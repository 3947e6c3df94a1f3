"""A hosted embedding API that fails during searches: the keyword lane still answers, with a warning;
a search that only the vector lane could answer is a 503 with Retry-After, never a 500."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rest_framework.test import APIClient

from knowledge.errors import ServiceUnavailable
from knowledge.models import Document, Tenant
from knowledge.pipeline.active import forget_active_embedder
from knowledge.search import search_chunks
from retrieval_backends.types import SearchScope
from tests.api.conftest import assert_error, post
from tests.embedding_stub import FakeEmbeddingServer, Fault, embedding_server
from tests.plugins import plugin_options

OVERLOADED = Fault(status=503, body={"error": {"message": "the embedding service is overloaded"}})


@pytest.fixture
def hosted(settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEmbeddingServer]:  # type: ignore[no-untyped-def]
    """The OpenAI embedder, configured as a deployment would, against a local server."""
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    with embedding_server() as server:
        settings.KNOWLEDGE_EMBEDDER = "openai"
        options = {"base_url": f"{server.root}/v1", "model": "m", "dimension": server.dimension}
        plugin_options(settings, "embedder", "openai", **options, max_retries=0)
        forget_active_embedder()
        yield server
    forget_active_embedder()


@pytest.fixture
def indexed(api: APIClient, hosted: FakeEmbeddingServer) -> None:
    for doc_id, content in (("ferry", "The ferry crossing"), ("tram", "Where the tram depot is")):
        body = {"id": doc_id, "content": content, "acl": {"public": True}}
        assert post(api, "index", body).status_code == 201
    assert post(api, "search", {"query": "ferry crossing"}).json()["warnings"] == []


def test_a_failing_embedder_leaves_the_keyword_lane_with_a_warning(
    api: APIClient, hosted: FakeEmbeddingServer, indexed: None
) -> None:
    hosted.faults = [OVERLOADED]
    response = post(api, "search", {"query": "ferry crossing"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert [r["document_id"] for r in body["results"]] == ["ferry"]
    assert body["results"][0]["similarity"] is None
    [warning] = body["warnings"]
    assert "vector lane left out: the query could not be embedded" in warning
    assert hosted.root not in warning  # the embedder's address and reply go to the log only


def test_only_the_vector_lane_failing_is_a_503(
    tenant: Tenant, hosted: FakeEmbeddingServer, indexed: None
) -> None:
    hosted.faults = [OVERLOADED]
    scope = SearchScope(tenant_id=tenant.pk, principal_tokens=frozenset({"public"}))
    with pytest.raises(ServiceUnavailable, match="could not be embedded"):
        search_chunks(scope=scope, query_text="ferry crossing", lanes=("vector",))


def test_indexing_while_the_embedder_is_down_is_a_503_and_stores_nothing(
    api: APIClient, hosted: FakeEmbeddingServer
) -> None:
    hosted.faults = [OVERLOADED]
    response = post(api, "index", {"id": "ferry", "content": "The ferry crossing"})
    body = assert_error(response, 503)
    assert body["error"] == "service_unavailable" and response.headers["Retry-After"] == "5"
    assert hosted.root not in body["message"]
    assert not Document.objects.filter(external_id="ferry").exists()
    assert post(api, "index", {"id": "ferry", "content": "The ferry crossing"}).status_code == 201


def test_an_embedder_that_rejects_the_request_is_a_502(api: APIClient, hosted: FakeEmbeddingServer) -> None:
    hosted.faults = [Fault(status=401, body={"error": {"message": "Incorrect API key provided"}})]
    response = post(api, "index", {"id": "ferry", "content": "The ferry crossing"})
    assert assert_error(response, 502)["error"] == "bad_gateway"
