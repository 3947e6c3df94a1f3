"""Query stages that ask an LLM: a planner of typed sub-queries, and alternate phrasings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from knowledge.pipeline.llm import ChatClient, LlmError
from knowledge.pipeline.stages.base import QueryStage, StageError
from knowledge.pipeline.stages.types import PlannedQuery, QueryFilters, StageContext

MAX_TEXT = 1000

PLANNER_PROMPT = (
    "You plan searches of a knowledge base. Split the user's question into at most {n} focused search "
    "queries. A query may narrow to some connectors or one environment, but only with the ids and slugs "
    "listed; use null for no filter. Weight the queries (0-1] by importance and give a short reason.\n"
    "Connectors: {connectors}\nEnvironments: {environments}"
)
PHRASINGS_PROMPT = (
    "Rewrite the user's search question {n} different ways that a relevant document might phrase it. "
    "Keep the meaning; vary the words."
)


def _client(options: dict[str, Any]) -> ChatClient:
    client = ChatClient.from_settings()
    for name in ("model", "timeout", "max_tokens"):
        if name in options:
            setattr(client, name, options[name])
    return client


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _planner_schema(max_queries: int) -> dict[str, Any]:
    query = {
        "type": "object",
        "additionalProperties": False,
        "required": ["text", "weight", "reason", "connector_ids", "environment"],
        "properties": {
            "text": {"type": "string"},
            "weight": {"type": "number"},
            "reason": {"type": "string"},
            "connector_ids": {"type": ["array", "null"], "items": {"type": "integer"}},
            "environment": {"type": ["string", "null"]},
        },
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["queries"],
        "properties": {"queries": {"type": "array", "items": query, "maxItems": max_queries}},
    }


def _planned(item: Any) -> PlannedQuery | None:
    """One planned query from the LLM's answer, or None when it is malformed."""
    if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
        return None
    weight = item.get("weight", 1.0)
    weight = min(1.0, max(0.01, float(weight))) if isinstance(weight, int | float) else 1.0
    connectors = item.get("connector_ids")
    ids = (
        tuple(sorted({int(i) for i in connectors if isinstance(i, int)}))
        if isinstance(connectors, list)
        else None
    )
    environment = item.get("environment") if isinstance(item.get("environment"), str) else None
    filters = QueryFilters(connector_ids=ids, environment=environment)
    reason = str(item.get("reason") or "")[:300]
    return PlannedQuery(item["text"].strip()[:MAX_TEXT], weight, reason, filters, origin="query_planner")


class QueryPlanner(QueryStage):
    """An LLM turns the question into typed planned queries (text, filters, weight, reason).

    Options: `max_queries` (default 4). Its filters are intersected with the caller's scope later,
    so a plan can only narrow what the caller may see.
    """

    name = "query_planner"
    kind = "llm"

    def run(self, queries: Sequence[PlannedQuery], context: StageContext) -> list[PlannedQuery]:
        max_queries = int(self.options.get("max_queries", 4))
        choices = context.choices
        system = PLANNER_PROMPT.format(
            n=max_queries,
            connectors=", ".join(f"{pk}: {name}" for pk, name in choices.get("connectors", [])) or "none",
            environments=", ".join(choices.get("environments", [])) or "none",
        )
        question = queries[0].text if queries else context.query.text or ""
        try:
            answer = _client(self.options).complete_json(
                system=system,
                user=question,
                schema=_planner_schema(max_queries),
                name="plan",
                budget=context.budget,
            )
        except LlmError as exc:
            raise StageError(exc.summary) from exc
        plan = [p for p in map(_planned, answer.get("queries") or []) if p is not None][:max_queries]
        if not plan:
            raise StageError("the planner returned an empty plan")
        return plan


class MultiQuery(QueryStage):
    """An LLM writes alternate phrasings of each query (deduplicated; the original kept by default).

    Options: `count` (default 3), `include_original` (default true).
    """

    name = "multi_query"
    kind = "llm"

    def run(self, queries: Sequence[PlannedQuery], context: StageContext) -> list[PlannedQuery]:
        count = int(self.options.get("count", 3))
        keep = bool(self.options.get("include_original", True))
        schema = {
            "type": "object",
            "additionalProperties": False,
            "required": ["phrasings"],
            "properties": {"phrasings": {"type": "array", "items": {"type": "string"}, "maxItems": count}},
        }
        out: list[PlannedQuery] = list(queries) if keep else []
        seen = {_normal(q.text) for q in out}
        for query in queries:
            try:
                answer = _client(self.options).complete_json(
                    system=PHRASINGS_PROMPT.format(n=count), user=query.text, schema=schema,
                    name="phrasings", budget=context.budget,
                )  # fmt: skip
            except LlmError as exc:
                raise StageError(exc.summary) from exc
            for text in (answer.get("phrasings") or [])[:count]:
                if isinstance(text, str) and text.strip() and _normal(text) not in seen:
                    seen.add(_normal(text))
                    out.append(
                        PlannedQuery(
                            text.strip()[:MAX_TEXT], query.weight, "a phrasing", query.filters, self.name
                        )
                    )
        if not out:
            raise StageError("no phrasing came back")
        return out
