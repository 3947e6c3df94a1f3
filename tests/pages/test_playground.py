"""The search playground: staff only, the API's scope and search, escaped highlighted snippets."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from knowledge.models import ApiKey, Connector, Principal, Tenant
from knowledge.pages.highlight import Segment, snippet
from knowledge.services.documents import document_upsert

pytestmark = pytest.mark.django_db
URL = "/playground/"


@pytest.fixture
def seeded(db: None) -> None:
    from django.core.management import call_command

    call_command("seed_demo", verbosity=0, without_hosted=True)


def user_id(email: str, tenant: str = "primary") -> str:
    return f"user:{Principal.objects.get(tenant__slug=tenant, external_id=email).pk}"


def search(client: Client, **params: Any) -> Any:
    query = {"tenant": "primary", "identity": "public", "top_k": "10", **params}
    response = client.get(URL, query)
    assert response.status_code == 200
    return response


def titles(response: Any) -> list[str]:
    return [hit.hit.title for hit in response.context["outcome"].hits]


def test_staff_only(client: Client) -> None:
    assert client.get(URL).status_code == 302 and "/admin/login/" in client.get(URL)["Location"]
    client.force_login(get_user_model().objects.create_user("plain", password="pw-123456"))
    assert "/admin/login/" in client.get(URL, {"q": "x"})["Location"]


def test_empty_form_renders_without_searching(staff: Client, seeded: None) -> None:
    response = staff.get(URL)
    assert response.status_code == 200 and response.context["outcome"] is None
    assert b'name="q"' in response.content and b"errorlist" not in response.content


def test_personas_see_what_the_api_would_show_them(staff: Client, seeded: None) -> None:
    query = "salary bands"
    assert "Salary bands 2026" not in titles(search(staff, q=query, identity=user_id("erin@example.com")))
    assert titles(search(staff, q=query, identity=user_id("hana@example.com")))[0] == "Salary bands 2026"
    assert "Salary bands 2026" not in titles(search(staff, q=query))
    assert titles(search(staff, q=query, identity="bypass"))[0] == "Salary bands 2026"
    # The API with a key that may search on behalf of hana returns the same chunks in the same order.
    _, plain = ApiKey.issue(
        tenant=Tenant.objects.get(slug="primary"), name="t", scopes=["search"], on_behalf_of=True
    )
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {plain}")
    body = api.post(
        "/api/v1/search", {"query": query, "on_behalf_of": "hana@example.com"}, format="json"
    ).json()
    page = search(staff, q=query, identity=user_id("hana@example.com")).context["outcome"]
    assert [r["id"] for r in body["results"]] == [h.hit.chunk_id for h in page.hits]


def test_environment_connectors_and_top_k_narrow_the_search(staff: Client, seeded: None) -> None:
    erin = user_id("erin@example.com")
    assert "Staging database credentials rotation" in titles(search(staff, q="database", identity=erin))
    in_prod = titles(search(staff, q="database", identity=erin, environment=_env("production")))
    assert "Staging database credentials rotation" not in in_prod and "On-call runbook" in in_prod
    folder = Connector.objects.get(tenant__slug="primary", name="handbook-folder")
    in_folder = set(titles(search(staff, q="vacation", connectors=[folder.pk])))
    assert in_folder and in_folder <= {"Expenses", "Remote work"}  # the folder's public files only
    assert len(titles(search(staff, q="vacation", top_k="1"))) == 1
    linked = staff.get(URL, {"tenant": "primary", "identity": "public", "q": "vacation"})  # top_k left out
    assert linked.context["outcome"] is not None and linked.context["form"].cleaned_data["top_k"] == 10


def _env(slug: str) -> str:
    from knowledge.models import Environment

    return str(Environment.objects.get(tenant__slug="primary", slug=slug).pk)


def test_a_hit_shows_citation_lanes_and_timing(staff: Client, seeded: None) -> None:
    response = search(staff, q="vacation days", identity=user_id("erin@example.com"))
    outcome = response.context["outcome"]
    top = outcome.hits[0]
    assert top.hit.title == "Vacation policy" and top.external_id == "handbook/vacation"
    assert top.admin_url == f"/admin/knowledge/document/{top.hit.document_id}/change/"
    assert set(top.hit.lane_ranks) == {"vector", "keyword"} and outcome.milliseconds > 0
    html = response.content.decode()
    assert "<mark>vacation</mark>" in html.lower() and top.admin_url in html and "handbook/vacation" in html
    assert re.search(r"fused.*?0\.0\d{4}", html, re.S)


def test_document_text_is_escaped_never_injected(staff: Client, seeded: None) -> None:
    connector = Connector.objects.get(tenant__slug="primary", name="api")
    document_upsert(
        connector=connector,
        external_id="evil",
        title="<img src=x onerror=alert(1)>",
        content="quokka <script>alert('x')</script> quokka",
        source_url="javascript:alert(1)",
        is_public=True,
    )
    document_upsert(
        connector=connector,
        external_id="cited",
        title="Cited",
        content="quokka habitats",
        source_url="https://wiki.example.com/quokka?a=1&b=2",
        is_public=True,
    )
    html = search(staff, q="quokka <script>").content.decode()
    assert 'href="https://wiki.example.com/quokka?a=1&amp;b=2"' in html
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;<mark>script</mark>&gt;alert(&#x27;x&#x27;)&lt;/<mark>script</mark>&gt;" in html
    assert 'href="javascript:' not in html and "<mark>quokka</mark>" in html


def test_bad_input_is_a_form_error_not_a_500(staff: Client, seeded: None) -> None:
    acme_user = user_id("sam@acme.example", tenant="acme")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"q": "x", "identity": acme_user}, "identity"),
        ({"q": "x", "top_k": "0"}, "top_k"),
        ({"q": "x", "top_k": "many"}, "top_k"),
        ({"q": "x", "tenant": "nope"}, "tenant"),
        ({"q": "x", "identity": "user:999999"}, "identity"),
        ({"q": "x", "environment": "999999"}, "environment"),
        (
            {"q": "x", "connectors": [str(Connector.objects.get(tenant__slug="acme", name="api").pk)]},
            "connectors",
        ),
        ({"q": "   "}, "q"),
    ]
    for params, field in cases:
        response = search(staff, **params)
        assert response.context["outcome"] is None
        assert response.context["form"].errors.get(field), (params, response.context["form"].errors)


def test_snippet_marks_terms_by_prefix_and_keeps_text_plain() -> None:
    segments = snippet("Policies: 25 days <b>per</b> year", "policy day")
    assert [s.text for s in segments if s.hit] == ["Policies", "days"]
    assert "".join(s.text for s in segments) == "Policies: 25 days <b>per</b> year"
    long = "filler " * 200 + "needle here" + " filler" * 200
    cut = snippet(long, "needle", width=100)
    assert cut[0] == Segment("…") and cut[-1] == Segment("…")
    assert Segment("needle", hit=True) in cut and len("".join(s.text for s in cut)) < 120
    assert snippet("no terms", "") == [Segment("no terms")]


def test_the_stage_trace_is_shown(staff: Client, seeded: None) -> None:
    response = search(staff, q="vacation days", identity=user_id("erin@example.com"))
    trace = response.context["outcome"].trace
    assert [t["name"] for t in trace] == ["retrieval", "parent_expand", "reranker", "compressor"]
    html = response.content.decode()
    assert "Stage trace (4 stages)" in html and "parent_expand" in html
