"""/api/v1/index and /api/v1/documents: create, unchanged, replace, client vectors, list, get, delete."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from knowledge.models import Chunk, ChunkEmbedding, Connector, Document, Principal, Tenant
from knowledge.services.documents import CLIENT_MODEL, document_soft_delete, document_upsert
from tests.api.conftest import ClientMaker, assert_error, post, post_raw
from tests.factories import ConnectorFactory, EnvironmentFactory

DOC = {"id": "handbook/vacation", "title": "Vacation", "content": "Employees get 25 days of paid vacation."}


def chunk_ids(external_id: str) -> set[int]:
    return set(Chunk.objects.filter(document__external_id=external_id).values_list("pk", flat=True))


def test_index_creates_then_reports_unchanged(api: APIClient) -> None:
    first = post(api, "index", DOC)
    assert (first.status_code, first.json()) == (201, {"status": "indexed"})
    before = chunk_ids(DOC["id"])
    again = post(api, "index", DOC)
    assert (again.status_code, again.json()) == (200, {"status": "unchanged"})
    assert chunk_ids(DOC["id"]) == before


def test_changed_content_replaces_the_old_chunks(api: APIClient) -> None:
    long_text = "\n\n".join(f"Paragraph {i}: " + "vacation policy words " * 60 for i in range(6))
    assert post(api, "index", {**DOC, "content": long_text}).status_code == 201
    old = chunk_ids(DOC["id"])
    assert len(old) > 1
    changed = post(api, "index", {**DOC, "content": "Employees now get 30 days."})
    assert (changed.status_code, changed.json()) == (201, {"status": "indexed"})
    assert chunk_ids(DOC["id"]).isdisjoint(old)
    assert list(Chunk.objects.filter(document__external_id=DOC["id"]).values_list("content", flat=True)) == [
        "Vacation\nEmployees now get 30 days."
    ]
    assert Document.objects.get().content == "Employees now get 30 days."


def test_acl_change_alone_is_applied_without_rechunking(api: APIClient) -> None:
    post(api, "index", DOC)
    before = chunk_ids(DOC["id"])
    assert post(api, "index", {**DOC, "acl": {"public": True}}).json() == {"status": "unchanged"}
    assert chunk_ids(DOC["id"]) == before
    assert Chunk.objects.get().acl_tokens == ["public"]


def test_index_with_client_embedding(api: APIClient) -> None:
    body = {**DOC, "embedding": [0.6, 0.8, 0.0], "acl": {"public": True}}
    assert post(api, "index", body).status_code == 201
    stored = ChunkEmbedding.objects.get()
    assert stored.model == CLIENT_MODEL and stored.dimensions == 3
    assert stored.vector_values() == pytest.approx([0.6, 0.8, 0.0])
    hit = post(api, "search", {"embedding": [0.6, 0.8, 0.0]}).json()["results"][0]
    assert hit["document_id"] == DOC["id"] and hit["similarity"] == pytest.approx(1.0)


def test_index_stores_all_fields(api: APIClient, tenant: Tenant) -> None:
    EnvironmentFactory.create(tenant=tenant, slug="production")
    body = {
        **DOC,
        "source_url": "https://intranet.example.com/vacation",
        "metadata": {"owner": "hr", "tags": ["policy"]},
        "acl": {"public": False, "users": ["erin@example.com"], "groups": ["hr"]},
        "environment": "production",
        "language": "simple",
    }
    assert post(api, "index", body).status_code == 201
    got = api.get("/api/v1/documents/handbook/vacation").json()
    assert got["id"] == DOC["id"] and got["source_account_id"] == "acme" and got["chunk_count"] == 1
    assert got["acl"] == {"public": False, "users": ["erin@example.com"], "groups": ["hr"]}
    assert (got["environment"], got["language"], got["metadata"]) == (
        "production",
        "simple",
        body["metadata"],
    )
    assert got["source_url"] == body["source_url"] and got["deleted_at"] is None


def test_get_unknown_document_is_404(api: APIClient) -> None:
    assert_error(api.get("/api/v1/documents/nope"), 404)


def test_delete_is_idempotent(api: APIClient) -> None:
    post(api, "index", DOC)
    assert api.delete("/api/v1/documents/handbook/vacation").status_code == 204
    assert api.delete("/api/v1/documents/handbook/vacation").status_code == 204
    assert not Document.objects.exists() and not Chunk.objects.exists()
    assert_error(api.get("/api/v1/documents/handbook/vacation"), 404)
    assert post(api, "search", {"query": "vacation", "bypass_acl": False}).json()["count"] == 0


def test_documents_of_another_connector_are_addressed_by_connector_id(api: APIClient, tenant: Tenant) -> None:
    other = ConnectorFactory.create(tenant=tenant)
    document_upsert(connector=other, external_id="wiki/page", content="wiki")
    assert_error(api.get("/api/v1/documents/wiki/page"), 404)
    assert api.get(f"/api/v1/documents/wiki/page?connector_id={other.pk}").json()["connector_id"] == other.pk
    assert api.delete(f"/api/v1/documents/wiki/page?connector_id={other.pk}").status_code == 204
    assert not Document.objects.exists()


def test_list_paginates(api: APIClient) -> None:
    for i in range(5):
        post(api, "index", {"id": f"doc-{i}", "content": f"text {i}"})
    page = api.get("/api/v1/documents?limit=2&offset=2").json()
    assert page["count"] == 5 and [d["id"] for d in page["results"]] == ["doc-2", "doc-3"]
    assert "offset=4" in page["next"] and page["previous"]
    assert len(api.get("/api/v1/documents").json()["results"]) == 5


def test_list_filters_by_connector_and_environment(api: APIClient, tenant: Tenant) -> None:
    EnvironmentFactory.create(tenant=tenant, slug="staging")
    post(api, "index", {"id": "api-staging", "content": "a", "environment": "staging"})
    post(api, "index", {"id": "api-any", "content": "b"})
    other = ConnectorFactory.create(tenant=tenant)
    document_upsert(connector=other, external_id="wiki", content="c")

    def ids(query: str) -> list[str]:
        response = api.get(f"/api/v1/documents?{query}")
        assert response.status_code == 200, response.content
        return [d["id"] for d in response.json()["results"]]

    assert ids(f"connector_id={other.pk}") == ["wiki"]
    assert ids("environment=staging") == ["api-staging"]
    assert sorted(ids("")) == ["api-any", "api-staging", "wiki"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("connector_id=abc", "connector_id"),
        ("connector_id=-1", "connector_id"),
        ("connector_id=99999999999999999999", "connector_id"),
        ("connector_id=999999", "connector_id"),
        ("environment=nowhere", "environment"),
        ("environment=%00", "environment"),
        ("limit=0", "limit"),
        ("limit=many", "limit"),
        ("offset=-2", "offset"),
        ("enviroment=staging", "enviroment"),
    ],
)
def test_list_refuses_bad_parameters(api: APIClient, query: str, field: str) -> None:
    assert_error(api.get(f"/api/v1/documents?{query}"), 400, field)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "no id"}, "id"),
        ({"id": "x"}, "content"),
        ({"id": "x", "content": ""}, "content"),
        ({"id": 7, "content": "numeric id"}, "id"),
        ({**DOC, "title": ["a"]}, "title"),
        ({**DOC, "source_url": "not a url"}, "source_url"),
        ({**DOC, "metadata": []}, "metadata"),
        ({**DOC, "metadata": {"a": "nul\x00"}}, "metadata"),
        ({**DOC, "acl": {"users": ["not-an-email"]}}, "acl.users.0"),
        ({**DOC, "acl": {"groups": [3]}}, "acl.groups.0"),
        ({**DOC, "acl": {"everyone": True}}, "acl.everyone"),
        ({**DOC, "acl": "public"}, "acl.non_field_errors"),
        ({**DOC, "environment": "nowhere"}, "environment"),
        ({**DOC, "language": "klingon"}, "language"),
        ({**DOC, "embedding": []}, "embedding"),
        ({**DOC, "embedding": [0.0, 0.0]}, "embedding"),
        ({**DOC, "colour": "red"}, "colour"),
    ],
)
def test_index_refuses_bad_input(api: APIClient, body: dict[str, object], field: str) -> None:
    assert_error(post(api, "index", body), 400, field)
    assert not Document.objects.exists()


@pytest.mark.parametrize("raw", ['{"id": "x", "content": "y", "embedding": [NaN]}', "{not json", "null"])
def test_index_refuses_malformed_json(api: APIClient, raw: str) -> None:
    assert_error(post_raw(api, "index", raw), 400)


@override_settings(KNOWLEDGE_MAX_CONTENT_CHARS=100)
def test_content_over_the_limit_is_413(api: APIClient) -> None:
    body = assert_error(post(api, "index", {"id": "big", "content": "x" * 101}), 413, "content")
    assert "100" in body["message"]
    assert post(api, "index", {"id": "ok", "content": "x" * 100}).status_code == 201


@override_settings(KNOWLEDGE_MAX_REQUEST_BYTES=1000)
@pytest.mark.parametrize("path", ["index", "search"])
def test_body_over_the_request_limit_is_413(api: APIClient, path: str) -> None:
    raw = json.dumps({"id": "big", "content": "x" * 2000, "query": "x"})
    body = assert_error(post_raw(api, path, raw), 413)
    assert "1000" in body["message"]


@pytest.mark.parametrize("external_id", ["a/b/c", "line\nbreak", "spaces and ünïcödé", "50%", "q?x=1#frag"])
def test_any_id_can_be_read_and_deleted(api: APIClient, external_id: str) -> None:
    from urllib.parse import quote

    assert post(api, "index", {"id": external_id, "content": "odd id"}).status_code == 201
    url = f"/api/v1/documents/{quote(external_id, safe='/')}"
    assert api.get(url).json()["id"] == external_id
    assert api.delete(url).status_code == 204
    assert not Document.objects.exists()


def test_api_pushes_never_land_in_a_pull_connector_named_api(api: APIClient, tenant: Tenant) -> None:
    folder = ConnectorFactory.create(tenant=tenant, name="api", kind="filesystem", config={"path": "/srv/x"})
    response = api.post("/api/v1/index", {"id": "d", "content": "text"}, format="json")
    body = assert_error(response, 409, "connector")
    assert "is a filesystem connector" in body["message"] and folder.documents.count() == 0
    assert api.get("/api/v1/documents/d").status_code == 404
    assert api.delete("/api/v1/documents/d").status_code == 204


def test_reading_a_document_creates_no_connector(api: APIClient, tenant: Tenant) -> None:
    assert api.get("/api/v1/documents/nothing").status_code == 404
    assert not Connector.objects.filter(tenant=tenant).exists()


def test_a_key_bound_to_a_user_lists_and_reads_only_what_that_user_may_see(
    api: APIClient, tenant: Tenant, make_client: ClientMaker
) -> None:
    post(api, "index", {"id": "open", "content": "a", "acl": {"public": True}})
    post(api, "index", {"id": "erin", "content": "b", "acl": {"users": ["erin@example.com"]}})
    post(api, "index", {"id": "hr", "content": "c", "acl": {"groups": ["hr"]}})
    post(api, "index", {"id": "sam", "content": "d", "acl": {"users": ["sam@example.com"]}})
    erin = Principal.objects.get(tenant=tenant, kind="user", external_id="erin@example.com")
    hr = Principal.objects.get(tenant=tenant, kind="group", external_id="hr")
    erin.groups.add(hr)
    as_erin = make_client(tenant, scopes=("search", "index"), principal=erin)
    listed = [d["id"] for d in as_erin.get("/api/v1/documents").json()["results"]]
    assert listed == ["erin", "hr", "open"]
    assert as_erin.get("/api/v1/documents/sam").status_code == 404
    assert as_erin.get("/api/v1/documents/hr").status_code == 200
    assert as_erin.delete("/api/v1/documents/sam").status_code == 204
    assert Document.objects.filter(external_id="sam").exists()  # not hers to delete: nothing happened
    index_scoped = [d["id"] for d in api.get("/api/v1/documents").json()["results"]]
    assert index_scoped == ["erin", "hr", "open", "sam"]


def test_a_user_bound_key_does_not_list_soft_deleted_documents(
    api: APIClient, tenant: Tenant, make_client: ClientMaker
) -> None:
    post(api, "index", {"id": "gone", "content": "a", "acl": {"public": True}})
    document_soft_delete(document=Document.objects.get(external_id="gone"))
    user = Principal.objects.create(tenant=tenant, kind="user", external_id="erin@example.com")
    as_erin = make_client(tenant, scopes=("index",), principal=user)
    assert as_erin.get("/api/v1/documents").json()["count"] == 0
    assert api.get("/api/v1/documents").json()["count"] == 1
