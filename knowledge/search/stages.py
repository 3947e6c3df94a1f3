"""Runs pipeline stages with their trace (within the search's deadline), narrows planned filters to the
caller's scope, and merges the fan-out of planned queries by chunk id with RRF."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypeVar

from knowledge.errors import ServiceUnavailable
from knowledge.models import Connector, Environment
from knowledge.pipeline.fusers.base import FusedHit
from knowledge.pipeline.stages.base import MAX_PLANNED_QUERIES, HitStage, QueryStage, Stage, StageError
from knowledge.pipeline.stages.types import PlannedQuery, QueryFilters, StageContext, StageHit, StageTrace
from knowledge.search.run import SearchRun
from retrieval_backends.types import SearchScope

logger = logging.getLogger(__name__)
T = TypeVar("T")
PREVIEW_CHARS = 120
PREVIEW_HITS = 5


def scope_choices(scope: SearchScope) -> dict[str, Any]:
    """The connectors and environments a planner may name: only those within the caller's scope."""
    connectors = Connector.objects.filter(tenant_id=scope.tenant_id)
    if scope.connector_ids is not None:
        connectors = connectors.filter(pk__in=scope.connector_ids)
    environments = Environment.objects.filter(tenant_id=scope.tenant_id)
    if scope.environment_id is not None:
        environments = environments.filter(pk=scope.environment_id)
    return {
        "connectors": list(connectors.order_by("pk").values_list("pk", "name")),
        "environments": list(environments.order_by("slug").values_list("slug", flat=True)),
    }


def narrow_scope(scope: SearchScope, filters: QueryFilters) -> SearchScope:
    """The caller's scope intersected with a planned query's filters: never wider. A connector of
    another tenant, or an environment the caller may not use, leaves nothing to search."""
    narrowed = scope
    if filters.connector_ids is not None:
        mine = set(
            Connector.objects.filter(tenant_id=scope.tenant_id, pk__in=filters.connector_ids).values_list(
                "pk", flat=True
            )
        )
        allowed = mine if scope.connector_ids is None else mine & set(scope.connector_ids)
        narrowed = replace(narrowed, connector_ids=tuple(sorted(allowed)))
    if filters.environment is not None:
        env = Environment.objects.filter(tenant_id=scope.tenant_id, slug=filters.environment).first()
        if env is None or (scope.environment_id is not None and env.pk != scope.environment_id):
            return replace(narrowed, connector_ids=())  # sees nothing
        narrowed = replace(narrowed, environment_id=env.pk)
    return narrowed


def _preview(items: Sequence[Any]) -> dict[str, Any]:
    if items and isinstance(items[0], PlannedQuery):
        queries = [
            {"text": q.text, "weight": q.weight, "reason": q.reason, "connector_ids": q.filters.connector_ids,
             "environment": q.filters.environment, "origin": q.origin}
            for q in items
        ]  # fmt: skip
        return {"queries": queries}
    return {
        "hits": [
            {"chunk_id": h.chunk_id, "score": round(h.score, 6), "content": h.content[:PREVIEW_CHARS]}
            for h in items[:PREVIEW_HITS]
        ]
    }


def run_stages(
    stages: Sequence[Stage],
    items: list[T],
    context: StageContext,
    traces: list[StageTrace],
    run: SearchRun | None = None,
) -> list[T]:
    """Run stages of one phase in order. A failing stage is skipped with a warning (or, when strict,
    fails the search with ServiceUnavailable); every stage leaves a trace. Logs carry names,
    statuses and counts only, never content."""
    for stage in stages:
        trace = StageTrace(stage.name, stage.kind, stage.phase)
        _count(trace, items, "in")
        warnings_before, started = len(context.warnings), time.perf_counter()
        try:
            if run is not None and run.expired():
                raise StageError("the search's deadline had passed")
            items = _call(stage, items, context)
        except StageError as exc:
            if stage.strict:  # the caller asked for this stage or nothing: a 503, never a 500
                raise ServiceUnavailable(f"stage {stage.name} failed: {exc}") from exc
            trace.status, trace.error = "skipped", str(exc)
            context.warnings.append(f"stage {stage.name} was skipped: {exc}")
        trace.duration_ms = (time.perf_counter() - started) * 1000
        trace.warnings = context.warnings.snapshot()[warnings_before:]
        _count(trace, items, "out")
        trace.preview = _preview(items)
        traces.append(trace)
        logger.debug(
            "stage %s %s %s in=%s out=%s",
            stage.phase,
            stage.name,
            trace.status,
            _n(trace, "in"),
            _n(trace, "out"),
        )
    return items


def _call(stage: Stage, items: list[Any], context: StageContext) -> list[Any]:
    if isinstance(stage, QueryStage):
        planned = stage.run(items, context)
        if len(planned) > MAX_PLANNED_QUERIES:
            context.warnings.append(
                f"stage {stage.name} planned {len(planned)} queries; the first {MAX_PLANNED_QUERIES} ran"
            )
        return planned[:MAX_PLANNED_QUERIES]
    if isinstance(stage, HitStage):
        return stage.run(items, context)
    raise StageError(f"{stage.name} has an unknown phase {stage.phase!r}")


def _count(trace: StageTrace, items: Sequence[Any], side: str) -> None:
    is_query = trace.phase == "query"
    setattr(trace, f"queries_{side}" if is_query else f"hits_{side}", len(items))


def _n(trace: StageTrace, side: str) -> int:
    return int(getattr(trace, f"queries_{side}" if trace.phase == "query" else f"hits_{side}"))


def merge_fanout(results: Sequence[tuple[PlannedQuery, list[FusedHit]]], k: int) -> list[StageHit]:
    """Merge each planned query's fused hits by chunk id: weighted RRF over the queries, the maximum
    raw lane score per lane, and which planned queries found each chunk."""
    merged: dict[int, dict[str, Any]] = {}
    for index, (query, fused) in enumerate(results):
        for rank, hit in enumerate(fused, start=1):
            entry = merged.setdefault(hit.chunk_id, {"score": 0.0, "fused": hit, "queries": [], "scores": {}})
            entry["score"] += query.weight / (k + rank)
            entry["queries"].append(index)
            for lane, value in hit.scores.items():
                entry["scores"][lane] = max(value, entry["scores"].get(lane, value))
    hits = [
        to_stage_hit(replace(e["fused"], scores=e["scores"]), score=e["score"], queries=tuple(e["queries"]))
        for e in merged.values()
    ]
    return sorted(hits, key=lambda h: (-h.score, h.chunk_id))


def to_stage_hit(fused: FusedHit, *, score: float | None = None, queries: tuple[int, ...] = (0,)) -> StageHit:
    hit = fused.hit
    return StageHit(
        chunk_id=fused.chunk_id,
        document_id=hit.document_id,
        chunk_index=hit.chunk_index,
        content=hit.content or "",
        score=fused.score if score is None else score,
        fused=fused,
        matched_queries=queries,
    )
