"""Stages one by one: the LLM client against a local stub server, planner, phrasings, compression,
diversity, decay, parent expansion, the order check, request stages and scope narrowing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge.errors import InvalidInput, ServiceUnavailable
from knowledge.pipeline.fusers.base import FusedHit
from knowledge.pipeline.llm import ChatClient, LlmError, TokenBudget
from knowledge.pipeline.stages.base import StageError, order_problem
from knowledge.pipeline.stages.hits import Compress, Decay, Diversify, ParentExpand, excerpts
from knowledge.pipeline.stages.query import MultiQuery, QueryPlanner
from knowledge.pipeline.stages.registry import build_stage, configured_stages, request_stages
from knowledge.pipeline.stages.types import PlannedQuery, QueryFilters, StageContext, StageHit, StageTrace
from knowledge.pipeline.types import Query
from knowledge.search.data import SearchData
from knowledge.search.stages import merge_fanout, narrow_scope, run_stages
from knowledge.services.documents import document_upsert
from retrieval_backends.types import LaneHit, SearchScope
from tests.factories import ConnectorFactory, EnvironmentFactory
from tests.pipeline.llm_stub import Script, llm_stub


def context(scope: SearchScope | None = None, text: str = "ferry timetable", limit: int = 10) -> StageContext:
    scope = scope or SearchScope(tenant_id=1, principal_tokens=frozenset({"public"}))
    return StageContext(
        query=Query(text=text), scope=scope, limit=limit, budget=TokenBudget(4000), data=SearchData()
    )


def hit(chunk_id: int, document_id: int, score: float, content: str = "text") -> StageHit:
    lane = LaneHit(chunk_id=chunk_id, document_id=document_id, chunk_index=0, score=score, content=content)
    fused = FusedHit(
        chunk_id=chunk_id, score=score, ranks={"keyword": 1}, scores={"keyword": score}, hit=lane
    )
    return StageHit(chunk_id, document_id, 0, content, score, fused=fused)


# --- the LLM client ---------------------------------------------------------------------------------
def test_the_client_asks_for_a_json_schema_answer_and_charges_the_budget() -> None:
    script = Script(replies=[{"queries": []}])
    with llm_stub(script) as url:
        budget = TokenBudget(1000)
        answer = ChatClient(url, api_key="k", model="m").complete_json(
            system="s", user="u", schema={"type": "object"}, name="plan", budget=budget
        )
    request = script.requests[0]
    assert answer == {"queries": []} and request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer k" and request["body"]["response_format"]["type"] == "json_schema"
    assert budget.used == 42


def test_the_client_retries_transient_failures_and_not_permanent_ones() -> None:
    script = Script(replies=[(503, "{}"), (429, "{}"), {"ok": True}])
    with llm_stub(script) as url:
        client = ChatClient(url, max_retries=2, sleep=lambda _: None)
        assert client.complete_json(system="s", user="u", schema={}, name="x") == {"ok": True}
    script = Script(replies=[(400, '{"error": {"message": "bad model"}}')])
    with llm_stub(script) as url, pytest.raises(LlmError, match="400") as caught:
        ChatClient(url, max_retries=3, sleep=lambda _: None).complete_json(
            system="s", user="u", schema={}, name="x"
        )
    assert caught.value.permanent and len(script.requests) == 1


def test_timeouts_bad_json_and_a_spent_budget_are_errors() -> None:
    with llm_stub(Script(delay=0.5)) as url, pytest.raises(LlmError, match="Timeout"):
        ChatClient(url, timeout=0.1, max_retries=0).complete_json(system="s", user="u", schema={}, name="x")
    raw = json.dumps({"choices": [{"message": {"content": "not json {"}}]})
    with llm_stub(Script(replies=[(200, raw)])) as url, pytest.raises(LlmError, match="not the JSON"):
        ChatClient(url).complete_json(system="s", user="u", schema={}, name="x")
    with pytest.raises(LlmError, match="budget"):
        ChatClient("http://127.0.0.1:9/v1").complete_json(
            system="s", user="u", schema={}, name="x", budget=TokenBudget(0)
        )


# --- query stages -----------------------------------------------------------------------------------
def test_the_planner_returns_typed_queries_and_an_empty_plan_is_an_error() -> None:
    def planned(text: str, weight: float, ids: list[int] | None, env: str | None) -> dict[str, object]:
        return {"text": text, "weight": weight, "reason": "r", "connector_ids": ids, "environment": env}

    plan = {
        "queries": [
            planned("ferry times", 0.8, [3, 3], None),
            planned("  ", 1, None, None),
            planned("harbour fees", 7, None, "prod"),
        ]
    }
    with (
        llm_stub(Script(replies=[plan, {"queries": []}])) as url,
        override_settings(KNOWLEDGE_LLM_BASE_URL=url),
    ):
        queries = QueryPlanner(max_queries=3).run([PlannedQuery("ferry?")], context())
        with pytest.raises(StageError, match="empty plan"):
            QueryPlanner().run([PlannedQuery("ferry?")], context())
    assert [(q.text, q.weight, q.filters) for q in queries] == [
        ("ferry times", 0.8, QueryFilters(connector_ids=(3,))),
        ("harbour fees", 1.0, QueryFilters(environment="prod")),
    ]


def test_multi_query_deduplicates_and_keeps_the_original() -> None:
    phrasings = {"phrasings": ["Ferry Timetable", "when do ferries leave", "when do ferries  leave"]}
    with llm_stub(Script(replies=[phrasings])) as url, override_settings(KNOWLEDGE_LLM_BASE_URL=url):
        out = MultiQuery(count=3).run([PlannedQuery("ferry timetable")], context())
    assert [q.text for q in out] == ["ferry timetable", "when do ferries leave"]


# --- hit stages -------------------------------------------------------------------------------------
def test_compress_returns_only_exact_substrings_and_drops_empty_hits() -> None:
    text = "The ferry leaves at nine. Lunch is served. The timetable changes in May!"
    found = excerpts(text, "ferry timetable", 200)
    assert found == ["The ferry leaves at nine.", "The timetable changes in May!"] and all(
        p in text for p in found
    )
    out = Compress(max_chars_per_hit=30).run(
        [hit(1, 1, 1.0, text), hit(2, 2, 0.5, "nothing relevant here")], context()
    )
    assert [h.chunk_id for h in out] == [1] and all(p in text for p in out[0].excerpts)


def test_llm_compression_discards_what_is_not_a_quote() -> None:
    text = "The ferry leaves at nine. Lunch is served."
    answer = {"excerpts": ["The ferry leaves at nine.", "The ferry departs at 9 (paraphrase)"]}
    with llm_stub(Script(replies=[answer])) as url, override_settings(KNOWLEDGE_LLM_BASE_URL=url):
        out = Compress(mode="llm").run([hit(1, 1, 1.0, text)], context())
    assert out[0].excerpts == ("The ferry leaves at nine.",)


def test_the_source_penalty_spreads_results_over_documents() -> None:
    hits = [hit(1, 10, 1.0), hit(2, 10, 0.99), hit(3, 10, 0.98), hit(4, 20, 0.5), hit(5, 30, 0.4)]
    assert [h.document_id for h in Diversify(source_penalty=0.0, limit=3).run(hits, context())] == [
        10,
        10,
        10,
    ]
    assert [h.document_id for h in Diversify(source_penalty=1.0, limit=3).run(hits, context())] == [
        10,
        20,
        30,
    ]


@pytest.mark.django_db
def test_decay_on_known_timestamps() -> None:
    connector = ConnectorFactory.create()
    now = timezone.now()
    fresh, old, none = (
        document_upsert(connector=connector, external_id=n, content=n, source_updated_at=t).document
        for n, t in (("fresh", now), ("old", now - timedelta(days=30)), ("none", None))
    )
    hits = [hit(1, old.pk, 1.0), hit(2, fresh.pk, 0.6), hit(3, none.pk, 0.9)]
    out = Decay(half_life="30 00:00:00").run(hits, context())
    assert [h.chunk_id for h in out] == [3, 2, 1]
    assert out[2].score == pytest.approx(0.5, rel=1e-3) and out[1].score == pytest.approx(0.6, rel=1e-3)
    assert [h.chunk_id for h in Decay(half_life="30 00:00:00", missing="drop").run(hits, context())] == [2, 1]


@pytest.mark.django_db
def test_parent_expand_attaches_the_parent_and_keeps_the_childs_citation() -> None:
    from knowledge.models import Chunk

    connector = ConnectorFactory.create()
    with override_settings(KNOWLEDGE_CHUNKER="parent-child"):
        from knowledge.pipeline.registry import reset_pipeline

        reset_pipeline()
        text = " ".join(f"word{i}" for i in range(400))
        document = document_upsert(
            connector=connector, external_id="long", content=text, is_public=True
        ).document
        reset_pipeline()
    children = list(
        Chunk.objects.filter(document=document, parent_index__isnull=False).order_by("chunk_index")
    )
    scope = SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))
    out = ParentExpand(max_parent_chars=50).run(
        [hit(c.pk, document.pk, 1.0 - i / 10) for i, c in enumerate(children[:2])], context(scope)
    )
    assert len(out) == 1 and out[0].chunk_id == children[0].pk
    assert out[0].parent_content is not None and len(out[0].parent_content) == 50


# --- configuration, order and the trace -------------------------------------------------------------
def test_a_query_stage_after_a_hit_stage_is_refused_everywhere() -> None:
    stages = [build_stage("compress"), build_stage("multi_query")]
    assert "multi_query" in (order_problem(stages) or "") and "compress" in (order_problem(stages) or "")
    with (
        override_settings(KNOWLEDGE_STAGES="compress,multi_query"),
        pytest.raises(ImproperlyConfigured, match="multi_query"),
    ):
        configured_stages()
    with pytest.raises(InvalidInput, match="comes after"):
        request_stages(["diversify", "query_planner"])
    with pytest.raises(InvalidInput, match="between"):
        request_stages([{"name": "diversify", "options": {"lambda": 3}}])
    with pytest.raises(InvalidInput, match="unknown stage"):
        request_stages(["os.system"])


def test_a_failing_stage_is_skipped_with_a_trace_unless_strict() -> None:
    ctx, traces = context(), list[StageTrace]()
    with (
        llm_stub(Script(replies=[(500, "{}")] * 3)) as url,
        override_settings(KNOWLEDGE_LLM_BASE_URL=url, KNOWLEDGE_LLM_RETRIES=0),
    ):
        queries = run_stages([QueryPlanner()], [PlannedQuery("ferry")], ctx, traces)
        assert [q.text for q in queries] == ["ferry"]
        assert traces[0].status == "skipped" and "500" in (traces[0].error or "")
        assert any("query_planner" in w for w in ctx.warnings)
        with pytest.raises(ServiceUnavailable, match="stage query_planner failed: ") as failed:
            run_stages([QueryPlanner(strict=True)], [PlannedQuery("ferry")], ctx, [])
        assert isinstance(failed.value.__cause__, StageError)
    trace: StageTrace = traces[0]
    assert trace.as_dict()["queries"] == {"in": 1, "out": 1} and trace.duration_ms >= 0


def test_merge_keeps_the_max_raw_score_and_the_matching_queries() -> None:
    a, b = hit(1, 1, 0.9).fused, hit(2, 2, 0.5).fused
    assert a is not None and b is not None
    b_strong = FusedHit(chunk_id=2, score=0.8, ranks={"keyword": 1}, scores={"keyword": 0.95}, hit=b.hit)
    merged = merge_fanout([(PlannedQuery("x"), [a, b]), (PlannedQuery("y", weight=0.5), [b_strong])], k=60)
    assert [h.chunk_id for h in merged] == [2, 1]
    top = merged[0].fused
    assert merged[0].matched_queries == (0, 1) and top is not None and top.scores["keyword"] == 0.95


@pytest.mark.django_db
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    mine=st.frozensets(st.integers(0, 2), max_size=3),
    foreign=st.booleans(),
    caller_connectors=st.one_of(st.none(), st.frozensets(st.integers(0, 2), max_size=3)),
    planned_env=st.sampled_from([None, "prod", "staging", "elsewhere"]),
    caller_env=st.sampled_from([None, "prod"]),
)
def test_planned_filters_only_ever_narrow_the_scope(
    mine, foreign, caller_connectors, planned_env, caller_env
) -> None:  # type: ignore[no-untyped-def]
    connectors = [ConnectorFactory.create(tenant=ConnectorFactory.create().tenant) for _ in range(1)]
    tenant = connectors[0].tenant
    own = [ConnectorFactory.create(tenant=tenant) for _ in range(3)]
    other = ConnectorFactory.create()
    envs = {slug: EnvironmentFactory.create(tenant=tenant, slug=slug) for slug in ("prod", "staging")}
    EnvironmentFactory.create(tenant=other.tenant, slug="elsewhere")
    scope = SearchScope(
        tenant_id=tenant.pk,
        principal_tokens=frozenset({"public"}),
        connector_ids=None
        if caller_connectors is None
        else tuple(sorted(own[i].pk for i in caller_connectors)),
        environment_id=envs[caller_env].pk if caller_env else None,
    )
    planned = tuple(sorted({own[i].pk for i in mine} | ({other.pk} if foreign else set())))
    narrowed = narrow_scope(scope, QueryFilters(connector_ids=planned or None, environment=planned_env))
    assert narrowed.tenant_id == scope.tenant_id and narrowed.principal_tokens == scope.principal_tokens
    if narrowed.connector_ids is not None:
        allowed = (
            set(scope.connector_ids) if scope.connector_ids is not None else {c.pk for c in own + connectors}
        )
        assert set(narrowed.connector_ids) <= allowed and other.pk not in narrowed.connector_ids
    if scope.environment_id is not None and not narrowed.sees_nothing:
        assert narrowed.environment_id == scope.environment_id
    if planned_env == "elsewhere":
        assert narrowed.sees_nothing


def test_configured_stage_options_pass_the_same_bounds_at_start_up(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins.json"

    def configured(stages: Sequence[object]) -> list[str]:
        plugins.write_text(json.dumps({"stages": stages}))
        with override_settings(KNOWLEDGE_STAGES=None, KNOWLEDGE_PLUGINS_FILE=plugins):
            return [stage.name for stage in configured_stages()]

    for options, message in (
        ({"max_parent_chars": "lots"}, "stages.parent_expand.max_parent_chars: must be a number"),
        ({"max_parent_chars": 10**9}, "stages.parent_expand.max_parent_chars: must be between 100 and 20000"),
    ):
        with pytest.raises(ImproperlyConfigured, match=message):
            configured([{"class": "parent_expand", "options": options}])
    with pytest.raises(ImproperlyConfigured, match="half_life must be a duration"):
        configured([{"class": "decay", "options": {"half_life": "99999999999 00:00:00"}}])
    fine = [{"class": "parent_expand", "options": {"max_parent_chars": 500}}, "reranker"]
    assert configured(fine) == ["parent_expand", "reranker"]


def test_the_fan_out_of_planned_queries_is_bounded() -> None:
    ctx = context()
    first = {"phrasings": [f"ferry phrasing {i}" for i in range(6)]}
    again = [{"phrasings": [f"phrasing {i} of {j}" for i in range(6)]} for j in range(8)]
    with llm_stub(Script(replies=[first, *again])) as url, override_settings(KNOWLEDGE_LLM_BASE_URL=url):
        stages = [MultiQuery(count=6), MultiQuery(count=6)]
        planned = run_stages(stages, [PlannedQuery("ferry timetable")], ctx, [])
    assert len(planned) == 8 and planned[0].text == "ferry timetable"
    assert "stage multi_query planned 49 queries; the first 8 ran" in ctx.warnings  # 7 + 7 x 6
