"""Runs every judged query through each configuration and scores the ranked documents."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from knowledge.evals.configs import EvalConfig
from knowledge.evals.datasets import Dataset
from knowledge.evals.metrics import MetricSet, dedupe, judged_queries, per_query
from knowledge.models import Connector, Document
from knowledge.search import Stages, search_chunks
from retrieval_backends.types import PUBLIC_TOKEN, SearchScope

MAX_CHUNKS = 200  # a document has several chunks, so the top max(k) documents need more chunks


@dataclass
class ConfigResult:
    """One configuration's mean metrics, throughput, per-query scores and ranked documents (top max(k))."""

    name: str
    metrics: dict[str, float]
    queries: int
    seconds: float
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    ranked: dict[str, list[str]] = field(default_factory=dict)
    stage_ms: dict[str, float] = field(default_factory=dict)  # mean time per query spent in each stage
    query_ms: list[float] = field(default_factory=list, repr=False)  # each query's search, in id order

    @property
    def queries_per_second(self) -> float:
        return self.queries / self.seconds if self.seconds else 0.0

    @property
    def p50_ms(self) -> float:
        return percentile(self.query_ms, 0.5)

    @property
    def p95_ms(self) -> float:
        return percentile(self.query_ms, 0.95)


def percentile(samples: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (0 for no samples)."""
    if not samples:
        return 0.0
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


def chunk_limit(ks: Sequence[int]) -> int:
    """Chunks to ask for: twice the deepest cut-off, at most MAX_CHUNKS (but never fewer than max(k))."""
    deepest = max(ks)
    return max(deepest, min(deepest * 2, MAX_CHUNKS))


def public_scope(connector: Connector) -> SearchScope:
    """What anyone may see in the connector: the evaluated corpora are public."""
    return SearchScope(
        tenant_id=connector.tenant_id,
        principal_tokens=frozenset({PUBLIC_TOKEN}),
        connector_ids=(connector.pk,),
    )


@dataclass(frozen=True)
class _Context:
    scope: SearchScope
    external_ids: dict[int, str]
    limit: int
    stage_ms: dict[str, list[float]] = field(default_factory=dict)


def _ranked(context: _Context, text: str, config: EvalConfig, stages: Stages) -> tuple[list[str], list[str]]:
    """The documents (external ids) in the order of their best chunk, and the search's warnings."""
    pipeline = config.stage_list()
    result = search_chunks(
        scope=context.scope,
        query_text=text,
        limit=context.limit,
        lanes=config.lanes,
        stages=stages,
        pipeline=pipeline,
        trace=pipeline is not None,
    )
    for record in result.trace or []:
        if record["phase"] != "fanout":
            context.stage_ms.setdefault(record["name"], []).append(record["duration_ms"])
    ranked = dedupe(context.external_ids[hit.document_id] for hit in result.hits)
    return ranked, result.warnings


def run_config(
    *,
    connector: Connector,
    dataset: Dataset,
    config: EvalConfig,
    metrics: MetricSet,
    query_ids: Sequence[str] | None = None,
    on_query: Callable[[], None] | None = None,
) -> ConfigResult:
    """Search each judged query (in id order) with `config` and average the metrics over them."""
    ids = list(query_ids if query_ids is not None else judged_queries(dataset.qrels))
    documents = Document.objects.filter(connector=connector).values_list("pk", "external_id")
    context = _Context(public_scope(connector), dict(documents), chunk_limit(metrics.ks))
    stages = config.stages()
    scores: dict[str, dict[str, float]] = {}
    kept: dict[str, list[str]] = {}
    warnings: dict[str, None] = {}
    query_ms: list[float] = []
    started = time.perf_counter()
    for query_id in ids:
        before = time.perf_counter()
        ranked, found = _ranked(context, dataset.queries[query_id], config, stages)
        query_ms.append((time.perf_counter() - before) * 1000)
        scores[query_id] = per_query(ranked, dataset.qrels[query_id], metrics)
        kept[query_id] = ranked[: max(metrics.ks)]
        warnings.update(dict.fromkeys(found))
        if on_query:
            on_query()
    seconds = time.perf_counter() - started
    means = {
        name: sum(s[name] for s in scores.values()) / len(ids) if ids else 0.0 for name in metrics.names()
    }
    stage_ms = {name: sum(times) / len(times) for name, times in context.stage_ms.items() if times}
    return ConfigResult(
        config.name, means, len(ids), seconds, scores, list(warnings), kept, stage_ms, query_ms
    )
