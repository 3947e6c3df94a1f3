"""Input bounds: ACL sizes, one-chunk documents with caller vectors, caller query vectors' model."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from knowledge.models import Principal, Tenant
from knowledge.pipeline.active import active_embedder
from knowledge.search import search_chunks
from knowledge.services.documents import document_upsert
from retrieval_backends.types import SearchScope
from tests.api.conftest import assert_error, post
from tests.factories import ConnectorFactory


def test_acl_lists_are_bounded(api: APIClient) -> None:
    users = [f"u{i}@example.com" for i in range(1001)]
    assert_error(post(api, "index", {"id": "d", "content": "x", "acl": {"users": users}}), 400, "acl.users")
    groups = [f"g{i}" for i in range(1001)]
    assert_error(
        post(api, "index", {"id": "d", "content": "x", "acl": {"groups": groups}}), 400, "acl.groups"
    )


def test_a_thousand_new_principals_are_created_in_bulk(
    api: APIClient, tenant: Tenant, django_assert_max_num_queries
) -> None:  # type: ignore[no-untyped-def]
    users = [f"u{i}@example.com" for i in range(1000)]
    with django_assert_max_num_queries(60):
        response = post(api, "index", {"id": "d", "content": "x", "acl": {"users": users, "groups": ["g"]}})
    assert response.status_code == 201
    assert Principal.objects.filter(tenant=tenant).count() == 1001


def test_a_caller_vector_for_a_document_too_big_for_one_chunk_is_413(api: APIClient) -> None:
    body = {"id": "big", "content": "word " * 30000, "embedding": [0.6, 0.8, 0.0]}
    response = assert_error(post(api, "index", body), 413, "content")
    assert "one chunk" in response["message"]


@pytest.mark.django_db
def test_a_caller_query_vector_searches_the_active_models_vectors_only() -> None:
    connector = ConnectorFactory.create()
    embedder = active_embedder()
    mine = document_upsert(
        connector=connector, external_id="embedded", content="ferry", is_public=True
    ).document
    vector = embedder.embed("a completely different passage")
    theirs = document_upsert(
        connector=connector, external_id="client", content="other", is_public=True, embedding=vector
    ).document
    scope = SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))
    result = search_chunks(scope=scope, query_embedding=vector, lanes=("vector",), limit=10)
    assert {h.document_id for h in result.hits} == {mine.pk}  # same dimension, other model: not mixed in
    assert theirs.pk not in {h.document_id for h in result.hits}
