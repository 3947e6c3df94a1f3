"""POST /api/v1/search: results, identity (fixed principal, on behalf of, groups), bypass, explain, errors."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from knowledge.models import Principal, Tenant
from tests.api.conftest import ClientMaker, assert_error, post, post_raw
from tests.factories import ConnectorFactory, EnvironmentFactory, GroupFactory, PrincipalFactory

RESULT_FIELDS = {
    *("id", "document_id", "chunk_index", "source_account_id", "title", "content", "source_url", "page"),
    *("score", "rrf_score", "similarity", "text_rank", "parent_content", "excerpts", "matched_queries"),
}


def found(response: object) -> list[str]:
    assert response.status_code == 200, response.content  # type: ignore[attr-defined]
    return sorted(r["document_id"] for r in response.json()["results"])  # type: ignore[attr-defined]


@pytest.fixture
def erin(tenant: Tenant) -> Principal:
    """A user in the `engineering` group."""
    user = PrincipalFactory.create(tenant=tenant, external_id="erin@example.com")
    user.groups.add(GroupFactory.create(tenant=tenant, external_id="engineering"))
    return user


@pytest.fixture
def corpus(api: APIClient, erin: Principal) -> None:
    """One public, one group-only, one user-only and one secret document, all about ferries."""
    docs = [
        ("public", {"public": True}),
        ("eng", {"groups": ["engineering"]}),
        ("erin", {"users": ["erin@example.com"]}),
        ("secret", {"users": ["boss@example.com"]}),
    ]
    for doc_id, acl in docs:
        body = {"id": doc_id, "title": f"Ferry {doc_id}", "content": f"Ferry timetable {doc_id}", "acl": acl}
        assert post(api, "index", body).status_code == 201


def test_results_have_the_documented_fields(api: APIClient, corpus: None) -> None:
    body = post(api, "search", {"query": "ferry timetable"}).json()
    assert body["count"] == len(body["results"]) == 1 and body["warnings"] == []
    result = body["results"][0]
    assert set(result) == RESULT_FIELDS
    assert result["document_id"] == "public" and result["source_account_id"] == "acme"
    assert result["title"] == "Ferry public" and result["similarity"] > 0
    assert isinstance(result["score"], float)
    assert result["text_rank"] is None  # a keyword score counts hidden chunks: shown with bypass only


def test_keyword_scores_are_shown_with_bypass_only(admin_api: APIClient, corpus: None) -> None:
    body = {"query": "ferry timetable public", "explain": True, "top_k": 1}
    hidden = post(admin_api, "search", {**body, "on_behalf_of": "erin@example.com"}).json()["results"][0]
    shown = post(admin_api, "search", {**body, "bypass_acl": True}).json()["results"][0]
    assert hidden["document_id"] == shown["document_id"] == "public"
    assert hidden["text_rank"] is None and hidden["explain"]["lane_scores"]["keyword"] is None
    assert shown["text_rank"] > 0 and shown["explain"]["lane_scores"]["keyword"] == shown["text_rank"]
    # What stays: the keyword lane's rank, the similarity and the fused score (normalised per answer).
    assert hidden["explain"]["lane_ranks"]["keyword"] == 1 and hidden["similarity"] == shown["similarity"]
    assert hidden["score"] > 0


def test_keyword_scores_for_everyone_when_the_setting_says_so(
    api: APIClient, corpus: None, settings: Any
) -> None:
    settings.KNOWLEDGE_KEYWORD_SCORES = "everyone"
    result = post(api, "search", {"query": "ferry", "explain": True}).json()["results"][0]
    assert result["text_rank"] > 0 and result["explain"]["lane_scores"]["keyword"] == result["text_rank"]


def test_key_without_principal_sees_public_only(api: APIClient, corpus: None) -> None:
    assert found(post(api, "search", {"query": "ferry"})) == ["public"]


def test_fixed_principal_sees_own_and_group_documents(
    tenant: Tenant, make_client: ClientMaker, corpus: None, erin: Principal
) -> None:
    client = make_client(tenant, principal=erin)
    assert found(post(client, "search", {"query": "ferry"})) == ["eng", "erin", "public"]


def test_on_behalf_of_user_expands_to_groups(admin_api: APIClient, corpus: None) -> None:
    body = {"query": "ferry", "on_behalf_of": "erin@example.com"}
    assert found(post(admin_api, "search", body)) == ["eng", "erin", "public"]


def test_on_behalf_of_replaces_the_fixed_principal(
    tenant: Tenant, make_client: ClientMaker, corpus: None, erin: Principal
) -> None:
    client = make_client(tenant, principal=erin, on_behalf_of=True)
    body = {"query": "ferry", "on_behalf_of": "boss@example.com"}
    assert found(post(client, "search", body)) == ["public", "secret"]


def test_unknown_user_sees_public_only_and_is_warned(admin_api: APIClient, corpus: None) -> None:
    body = {"query": "ferry", "on_behalf_of": "stranger@example.com"}
    response = post(admin_api, "search", body)
    assert found(response) == ["public"]
    assert response.json()["warnings"] == [
        "on_behalf_of: no user 'stranger@example.com' in this source account; "
        "only public documents were searched"
    ]
    known = post(admin_api, "search", {**body, "on_behalf_of": "erin@example.com"}).json()
    assert not any("on_behalf_of" in w for w in known["warnings"])


def test_bypass_sees_everything(admin_api: APIClient, corpus: None) -> None:
    assert found(post(admin_api, "search", {"query": "ferry", "bypass_acl": True})) == [
        *("eng", "erin", "public", "secret")
    ]


def test_explain_adds_lane_ranks_and_fusion_terms(api: APIClient, corpus: None) -> None:
    plain = post(api, "search", {"query": "ferry"}).json()["results"][0]
    assert "explain" not in plain
    result = post(api, "search", {"query": "ferry", "explain": True}).json()["results"][0]
    explain = result["explain"]
    assert explain["fusion"] == "zscore" and explain["lane_ranks"] == {"vector": 1, "keyword": 1}
    assert explain["lane_scores"] == {"vector": result["similarity"], "keyword": result["text_rank"]}
    assert set(explain["fusion_terms"]) == {"vector", "keyword"}
    assert sum(explain["fusion_terms"].values()) == pytest.approx(result["rrf_score"])


def test_explain_names_the_configured_fuser_and_its_terms(
    api: APIClient, corpus: None, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from knowledge.pipeline.registry import reset_pipeline

    monkeypatch.setenv("KNOWLEDGE_FUSER", "rrf")
    settings.KNOWLEDGE_FUSER = "rrf"
    reset_pipeline()
    try:
        result = post(api, "search", {"query": "ferry", "explain": True}).json()["results"][0]
    finally:
        reset_pipeline()
    assert result["explain"]["fusion"] == "rrf"
    k = settings.KNOWLEDGE_PLUGINS["fuser"]["rrf"]["OPTIONS"]["k"]
    assert result["explain"]["fusion_terms"] == pytest.approx({"vector": 1 / (k + 1), "keyword": 1 / (k + 1)})
    assert result["rrf_score"] == pytest.approx(2 / (k + 1))


def test_top_k_limits_results(admin_api: APIClient, corpus: None) -> None:
    body = {"query": "ferry", "bypass_acl": True, "top_k": 2}
    assert post(admin_api, "search", body).json()["count"] == 2


def test_client_vector_search(api: APIClient) -> None:
    for doc_id, vector in (("x", [1.0, 0.0, 0.0]), ("y", [0.0, 1.0, 0.0])):
        body = {"id": doc_id, "content": f"vector {doc_id}", "embedding": vector, "acl": {"public": True}}
        assert post(api, "index", body).status_code == 201
    results = post(api, "search", {"embedding": [0.9, 0.1, 0.0], "top_k": 1}).json()["results"]
    assert [r["document_id"] for r in results] == ["x"]
    assert results[0]["text_rank"] is None and results[0]["similarity"] > 0.9


def test_query_vector_of_unknown_dimension_names_the_known_ones(api: APIClient, corpus: None) -> None:
    body = assert_error(post(api, "search", {"embedding": [0.1, 0.2]}), 400, "embedding")
    assert "2 dimensions" in body["message"] and "384" in body["message"]


def test_environment_filter(api: APIClient, tenant: Tenant) -> None:
    EnvironmentFactory.create(tenant=tenant, slug="production")
    EnvironmentFactory.create(tenant=tenant, slug="staging")
    for doc_id, env in (("p", "production"), ("s", "staging"), ("all", None)):
        body = {"id": doc_id, "content": "deploy checklist", "acl": {"public": True}}
        assert post(api, "index", {**body, "environment": env} if env else body).status_code == 201
    assert found(post(api, "search", {"query": "deploy", "environment": "production"})) == ["all", "p"]
    assert found(post(api, "search", {"query": "deploy"})) == ["all", "p", "s"]


def test_connector_filter(api: APIClient, tenant: Tenant) -> None:
    from knowledge.services.documents import document_upsert

    other = ConnectorFactory.create(tenant=tenant)
    document_upsert(connector=other, external_id="wiki", content="deploy checklist", is_public=True)
    assert (
        post(api, "index", {"id": "api", "content": "deploy notes", "acl": {"public": True}}).status_code
        == 201
    )
    assert found(post(api, "search", {"query": "deploy", "connector_ids": [other.pk]})) == ["wiki"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "query"),
        ({"query": "   "}, "query"),
        ({"query": 5}, "query"),
        ({"query": "x", "top_k": 0}, "top_k"),
        ({"query": "x", "top_k": 101}, "top_k"),
        ({"query": "x", "top_k": "10"}, "top_k"),
        ({"query": "x", "explain": "yes"}, "explain"),
        ({"query": "x", "bypass_acl": 1}, "bypass_acl"),
        ({"query": "x", "colour": "red"}, "colour"),
        ({"embedding": []}, "embedding"),
        ({"embedding": "0.1,0.2"}, "embedding"),
        ({"embedding": [0.1, "x"]}, "embedding.1"),
        ({"embedding": [True]}, "embedding.0"),
        ({"query": "x", "connector_ids": [0]}, "connector_ids.0"),
        ({"query": "x", "connector_ids": [999999]}, "connector_ids"),
        ({"query": "x", "environment": "nowhere"}, "environment"),
        ({"query": "x", "environment": "not a slug"}, "environment"),
        ({"query": "x", "source_account_id": 7}, "source_account_id"),
    ],
)
def test_bad_input_is_400_naming_the_field(
    api: APIClient, corpus: None, body: dict[str, object], field: str
) -> None:
    assert_error(post(api, "search", body), 400, field)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"embedding": [NaN]}', None),
        ('{"embedding": [Infinity]}', None),
        ('{"embedding": [-Infinity]}', None),
        ('{"embedding": [1e400]}', "embedding.0"),
        ('{"embedding": [3.5e38, 1]}', "embedding"),
        ('{"embedding": [0, 0, 0]}', "embedding"),
        ('{"embedding": [1e-30, 0, 0]}', "embedding"),
        ('{"query": "unterminated', None),
        ("[1, 2]", "non_field_errors"),
        ('"just a string"', "non_field_errors"),
        ("", None),
    ],
)
def test_malformed_bodies_are_400(api: APIClient, corpus: None, raw: str, field: str | None) -> None:
    assert_error(post_raw(api, "search", raw), 400, field)


def test_other_media_types_are_415(api: APIClient) -> None:
    response = api.post("/api/v1/search", data="query=x", content_type="application/x-www-form-urlencoded")
    assert_error(response, 415)


def test_a_search_request_costs_the_key_look_up_plus_the_search(
    admin_api: APIClient, corpus: None, django_assert_max_num_queries: Any
) -> None:
    """Document ids come with the hydrated hits: the view adds no statement of its own."""
    body = {"query": "ferry timetable", "on_behalf_of": "erin@example.com"}
    post(admin_api, "search", body)  # fills the look-up cache
    # The key; the identity (a principal and its groups); one statement per lane; the hydration.
    with django_assert_max_num_queries(5):
        response = post(admin_api, "search", body)
    assert found(response) == ["eng", "erin", "public"]
