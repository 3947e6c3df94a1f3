"""Tenant isolation: two tenants with identical documents; each key sees only its own, by every endpoint."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from knowledge.models import Document
from tests.api.conftest import ClientMaker, post
from tests.factories import TenantFactory

DOCS = [
    {"id": "shared/one", "content": "Quarterly revenue figures and forecasts", "acl": {"public": True}},
    {"id": "shared/two", "content": "Quarterly revenue board notes", "acl": {"groups": ["board"]}},
]


@pytest.fixture
def clients(make_client: ClientMaker) -> dict[str, APIClient]:
    """Keys of two tenants (each allowed to bypass ACLs), both tenants holding the same documents."""
    out = {}
    for slug in ("acme", "globex"):
        client = make_client(TenantFactory.create(slug=slug), bypass_acl=True)
        for doc in DOCS:
            assert post(client, "index", doc).status_code == 201
        out[slug] = client
    return out


@pytest.mark.parametrize("slug", ["acme", "globex"])
def test_search_sees_only_the_own_tenant(clients: dict[str, APIClient], slug: str) -> None:
    for body in ({"query": "quarterly revenue"}, {"query": "quarterly revenue", "bypass_acl": True}):
        results = post(clients[slug], "search", {**body, "top_k": 100}).json()["results"]
        assert results and {r["source_account_id"] for r in results} == {slug}
    chunk_ids = {
        r["id"]
        for r in post(clients[slug], "search", {"query": "revenue", "bypass_acl": True}).json()["results"]
    }
    own = set(Document.objects.filter(tenant__slug=slug).values_list("chunks__id", flat=True))
    assert chunk_ids == own


@pytest.mark.parametrize("slug", ["acme", "globex"])
def test_get_and_list_see_only_the_own_tenant(clients: dict[str, APIClient], slug: str) -> None:
    listed = clients[slug].get("/api/v1/documents").json()
    assert listed["count"] == 2 and {d["source_account_id"] for d in listed["results"]} == {slug}
    assert clients[slug].get("/api/v1/documents/shared/one").json()["source_account_id"] == slug


def test_delete_leaves_the_other_tenant_alone(clients: dict[str, APIClient]) -> None:
    assert clients["acme"].delete("/api/v1/documents/shared/one").status_code == 204
    assert clients["acme"].get("/api/v1/documents/shared/one").status_code == 404
    assert clients["globex"].get("/api/v1/documents/shared/one").status_code == 200
    found = post(clients["globex"], "search", {"query": "quarterly revenue figures"}).json()["results"]
    assert "shared/one" in {r["document_id"] for r in found}


def test_other_tenants_connectors_and_environments_are_unknown(clients: dict[str, APIClient]) -> None:
    from knowledge.models import Connector, Environment

    globex_connector = Connector.objects.get(tenant__slug="globex")
    Environment.objects.create(tenant=globex_connector.tenant, slug="production", name="Production")
    acme = clients["acme"]
    body = {"query": "revenue", "connector_ids": [globex_connector.pk]}
    assert post(acme, "search", body).status_code == 400
    assert post(acme, "search", {"query": "revenue", "environment": "production"}).status_code == 400
    assert acme.get(f"/api/v1/documents?connector_id={globex_connector.pk}").status_code == 400
    assert acme.get(f"/api/v1/documents/shared/one?connector_id={globex_connector.pk}").status_code == 400
    assert acme.delete(f"/api/v1/documents/shared/one?connector_id={globex_connector.pk}").status_code == 400
    assert Document.objects.filter(tenant__slug="globex").count() == 2


def test_acl_groups_of_the_same_name_stay_per_tenant(
    clients: dict[str, APIClient], make_client: ClientMaker
) -> None:
    from knowledge.models import Principal

    acme_board = Principal.objects.get(tenant__slug="acme", external_id="board")
    erin = Principal.objects.create(tenant=acme_board.tenant, kind="user", external_id="erin@example.com")
    erin.groups.add(acme_board)
    globex = Document.objects.get(tenant__slug="globex", external_id="shared/two")
    assert not globex.allowed_principals.filter(pk=acme_board.pk).exists()
    client = make_client(acme_board.tenant, principal=erin)
    results = post(client, "search", {"query": "board notes", "top_k": 100}).json()["results"]
    assert {(r["source_account_id"], r["document_id"]) for r in results} == {
        ("acme", "shared/one"),
        ("acme", "shared/two"),
    }
