"""Stages through the API: a request's own stages, bounded and ordered; the trace; planner scope."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import override_settings
from rest_framework.test import APIClient

from knowledge.models import Tenant
from knowledge.services.documents import document_upsert
from tests.api.conftest import assert_error, post
from tests.factories import ConnectorFactory, GroupFactory
from tests.pipeline.llm_stub import Script, llm_stub

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus(tenant: Tenant) -> dict[str, int]:
    connector = ConnectorFactory.create(tenant=tenant, name="docs")
    secret = GroupFactory.create(tenant=tenant, external_id="board")
    texts = {
        "a": "The ferry timetable changes in May. Ferries leave at nine.",
        "b": "The ferry timetable for winter. Harbour fees apply.",
        "c": "Board minutes: the ferry company will be sold.",
    }
    ids = {}
    for key, text in texts.items():
        acl = {"principals": [secret]} if key == "c" else {"is_public": True}
        ids[key] = document_upsert(connector=connector, external_id=key, content=text, **acl).document.pk  # type: ignore[arg-type]
    return ids


def test_a_request_runs_its_own_stages_and_gets_a_trace(api: APIClient, corpus: dict[str, int]) -> None:
    body = {
        "query": "ferry timetable",
        "stages": [{"name": "compress", "options": {"max_chars_per_hit": 60}}],
        "trace": True,
    }
    response = post(api, "search", body)
    assert response.status_code == 200, response.content
    data = response.json()
    assert [t["name"] for t in data["trace"]] == ["retrieval", "compress"]
    compress = data["trace"][1]
    assert compress["status"] == "success" and compress["hits"]["in"] >= compress["hits"]["out"] >= 1
    for result in data["results"]:
        assert result["excerpts"] and all(len(p) <= 60 for p in result["excerpts"])
    previews = {h["chunk_id"] for t in data["trace"] for h in t["preview"].get("hits", [])}
    visible = {r["id"] for r in post(api, "search", {"query": "ferry", "top_k": 100}).json()["results"]}
    assert previews <= visible  # previews only ever show what the caller may see


@pytest.mark.parametrize(
    ("stages", "field"),
    [
        (["diversify", "multi_query"], "stages"),
        (["nope"], "stages"),
        ([{"name": "diversify", "options": {"lambda": 2}}], "stages.diversify.lambda"),
        ([{"name": "decay", "options": {"shell": "rm"}}], "stages.decay"),
        ([{"name": "decay", "options": {"half_life": "abc"}}], "stages.decay"),
        ([{"name": "decay", "options": {"half_life": "-5 00:00:00"}}], "stages.decay"),
        ([{"name": "decay", "options": {"half_life": 0}}], "stages.decay.half_life"),
        ([{"name": "decay", "options": {"field": "zzz"}}], "stages.decay"),
        ([{"name": "diversify"}] * 9, "stages"),
    ],
)
def test_bad_request_stages_are_400(
    api: APIClient, corpus: dict[str, int], stages: list[object], field: str
) -> None:
    assert_error(post(api, "search", {"query": "ferry", "stages": stages}), 400, field)


def test_a_planner_naming_other_tenants_connectors_gets_nothing_from_them(
    api: APIClient, tenant: Tenant, corpus: dict[str, int]
) -> None:
    foreign = ConnectorFactory.create()
    document_upsert(connector=foreign, external_id="x", content="ferry timetable elsewhere", is_public=True)
    plan = {
        "queries": [
            {
                "text": "ferry timetable",
                "weight": 1,
                "reason": "r",
                "connector_ids": [foreign.pk],
                "environment": None,
            }
        ]
    }
    with llm_stub(Script(replies=[plan])) as url, override_settings(KNOWLEDGE_LLM_BASE_URL=url):
        data = post(api, "search", {"query": "ferry", "stages": ["query_planner"], "trace": True}).json()
    assert data["results"] == []  # the plan could only narrow: to a connector the caller cannot reach
    assert data["trace"][0]["name"] == "query_planner" and data["trace"][0]["status"] == "success"


def test_a_failing_llm_stage_is_skipped_with_a_warning(api: APIClient, corpus: dict[str, int]) -> None:
    with (
        llm_stub(Script(replies=[(500, "{}")] * 4)) as url,
        override_settings(KNOWLEDGE_LLM_BASE_URL=url, KNOWLEDGE_LLM_RETRIES=0),
    ):
        data = post(
            api, "search", {"query": "ferry timetable", "stages": ["multi_query"], "trace": True}
        ).json()
    assert data["results"] and data["trace"][0]["status"] == "skipped"
    assert any("multi_query" in w for w in data["warnings"])


def test_the_configured_order_is_checked_at_start_up() -> None:
    from django.core.management.base import SystemCheckError

    with (
        override_settings(KNOWLEDGE_STAGES="diversify,query_planner"),
        pytest.raises(SystemCheckError, match="query_planner"),
    ):
        call_command("check")


def test_configured_stage_options_are_checked_at_start_up(tmp_path: Path) -> None:
    from django.core.management.base import SystemCheckError

    plugins = tmp_path / "plugins.json"
    plugins.write_text(json.dumps({"stages": [{"class": "decay", "options": {"half_life": "soon"}}]}))
    with (
        override_settings(KNOWLEDGE_STAGES="", KNOWLEDGE_PLUGINS_FILE=plugins),
        pytest.raises(SystemCheckError, match="decay: half_life must be a duration from 1 second"),
    ):
        call_command("check")


def test_the_schema_states_the_allow_list_and_every_option_bound(api: APIClient) -> None:
    from knowledge.pipeline.stages.registry import REQUEST_OPTIONS

    schema = api.get("/api/schema/", {"format": "json"}).json()
    request = schema["components"]["schemas"]["SearchRequestRequest"]
    stages = request["properties"]["stages"]["items"]["oneOf"]
    assert sorted(stages[0]["enum"]) == sorted(REQUEST_OPTIONS)
    by_name = {
        s["properties"]["name"]["enum"][0]: s["properties"]["options"]["properties"] for s in stages[1:]
    }
    assert set(by_name) == set(REQUEST_OPTIONS)
    assert by_name["diversify"]["lambda"] == {"type": "number", "minimum": 0.0, "maximum": 1.0}
    assert by_name["decay"]["half_life"] == {"type": "string", "maxLength": 200}
    assert by_name["decay"]["missing"] == {"enum": ["ignore", "drop"]}


def test_an_llm_error_reply_stays_in_the_log(api: APIClient, corpus: dict[str, int]) -> None:
    reply = '{"error": {"message": "Incorrect API key provided: sk-live-SECRET123, host llm-gw.internal"}}'
    with (
        llm_stub(Script(replies=[(401, reply)])) as url,
        override_settings(KNOWLEDGE_LLM_BASE_URL=url, KNOWLEDGE_LLM_RETRIES=0),
    ):
        data = post(
            api, "search", {"query": "ferry timetable", "stages": ["multi_query"], "trace": True}
        ).json()
    shown = json.dumps(data)
    assert "SECRET123" not in shown and "llm-gw" not in shown and url not in shown
    assert "stage multi_query was skipped: the LLM answered HTTP 401" in data["warnings"][0]


@override_settings(KNOWLEDGE_LLM_BASE_URL="https://api.openai.com/v1", KNOWLEDGE_LLM_API_KEY="")
def test_without_a_configured_llm_no_question_leaves_the_server(
    api: APIClient, corpus: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[object] = []
    monkeypatch.setattr("knowledge.pipeline.llm.httpx.post", lambda *a, **k: sent.append(a))
    body = {
        "query": "ferry timetable",
        "stages": ["multi_query", {"name": "compress", "options": {"mode": "llm"}}],
    }
    data = post(api, "search", body).json()
    assert sent == [] and data["results"]
    assert all("no LLM is configured" in w for w in data["warnings"]) and len(data["warnings"]) == 2
