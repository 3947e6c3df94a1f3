"""A caller's query vector searches one model's vectors; when that hides caller-supplied ones, it says so."""

from __future__ import annotations

from rest_framework.test import APIClient

from knowledge.pipeline.active import active_embedder
from tests.api.conftest import post


def test_a_query_vector_warns_when_caller_supplied_vectors_of_its_dimension_are_not_searched(
    api: APIClient,
) -> None:
    dimension = active_embedder().dimension
    vector = [1.0] + [0.0] * (dimension - 1)
    assert post(api, "index", {"id": "embedded-here", "content": "plain text"}).status_code == 201
    first = post(api, "search", {"embedding": vector}).json()
    assert first["warnings"] == []
    body = {"id": "brought-its-own", "content": "own vector", "embedding": vector, "acl": {"public": True}}
    assert post(api, "index", body).status_code == 201
    [warning] = post(api, "search", {"embedding": vector}).json()["warnings"]
    assert "caller-supplied embedding of that dimension are not among them" in warning
