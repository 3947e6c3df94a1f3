"""Search as a pipeline: query stages plan queries, the base retrieval runs once per planned query
(concurrently), the results merge by chunk id, and hit stages refine the pool into the answer.

With the default pipeline (no query stage) there is one planned query, and the hits keep the fused
scores of the base retrieval. Every stage is traced; the trace is returned on request. One
`SearchRun` carries the executor, the deadline, the warnings and the trace through all of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from django.conf import settings
from django.db import connection

from knowledge.errors import InvalidInput
from knowledge.pipeline.active import active_embedder
from knowledge.pipeline.embedders.base import Embedder, EmbedderError
from knowledge.pipeline.fusers.base import FusedHit, Fuser
from knowledge.pipeline.llm import TokenBudget
from knowledge.pipeline.registry import get_fuser
from knowledge.pipeline.stages.base import HIT, QUERY, HitStage, Stage
from knowledge.pipeline.stages.hits import CompressorStage, RerankerStage
from knowledge.pipeline.stages.registry import configured_stages
from knowledge.pipeline.stages.types import PlannedQuery, StageContext, StageHit, StageTrace
from knowledge.pipeline.types import Query
from knowledge.plugins import process_singleton
from knowledge.search.data import SearchData
from knowledge.search.hydrate import hydrate_hits
from knowledge.search.lanes import LANES, LaneRequest, Retrieved, VectorQuery, retrieve, vector_query
from knowledge.search.results import SearchHit, SearchResult, Stages
from knowledge.search.run import DeadlinePassed, SearchRun
from knowledge.search.stages import merge_fanout, narrow_scope, run_stages, scope_choices, to_stage_hit
from retrieval_backends.base import BackendUnavailable
from retrieval_backends.registry import get_backend
from retrieval_backends.types import PAGE_UNKNOWN, SearchScope

RERANK_POOL_FACTOR = 3  # hits hydrated for the hit stages, per result asked for
# Lanes read the text of their first 2 x limit hits: on SciFact the hybrid top 10 lay within them for
# all 300 questions tried (within the first 10 for 72 %), so no second read is needed.
LANE_TEXT_PER_RESULT = 2
H = TypeVar("H")


@process_singleton
def _configured() -> tuple[Stage, ...]:
    return tuple(configured_stages())


def forget_configured_stages() -> None:
    _configured.cache_clear()  # type: ignore[attr-defined]


def search_chunks(
    *,
    scope: SearchScope,
    query_text: str | None = None,
    query_embedding: Sequence[float] | None = None,
    limit: int = 10,
    lanes: Sequence[str] = LANES,
    candidates: int | None = None,
    stages: Stages | None = None,
    pipeline: Sequence[Stage] | None = None,
    trace: bool = False,
) -> SearchResult:
    """Search the chunks visible in `scope`; text without a vector is embedded by the active embedder.

    `pipeline` replaces the configured stages (query stages first); `trace` returns each stage's record.
    """
    query_text = (query_text or "").strip() or None
    if query_text is None and query_embedding is None:
        raise InvalidInput("give a query text, an embedding, or both", field="query")
    if scope.sees_nothing:
        return SearchResult(hits=[], trace=[] if trace else None)
    ask = Ask(scope, query_text, query_embedding, limit, tuple(lanes), candidates, stages or Stages())
    search = Search(ask, SearchRun())
    chosen = _pipeline(pipeline, ask.stages)
    planned = search.plan([s for s in chosen if s.phase == QUERY])
    hit_stages = [s for s in chosen if s.phase == HIT]
    pool = search.fan_out(planned, hit_stages)
    hits = run_stages(hit_stages, pool, search.context, search.run.traces, search.run)
    return SearchResult(
        hits=[_to_search_hit(h) for h in hits[:limit]],
        warnings=search.run.warnings.snapshot(),
        lanes=search.lanes,
        trace=[t.as_dict() for t in search.run.traces] if trace else None,
        queries=planned,
    )


@dataclass(frozen=True)
class Ask:
    """What the caller asked for."""

    scope: SearchScope
    text: str | None
    embedding: Sequence[float] | None
    limit: int
    lanes: tuple[str, ...]
    candidates: int | None
    stages: Stages


class Search:
    """One search's steps: plan, fan out (retrieve and merge), hydrate the pool."""

    def __init__(self, ask: Ask, run: SearchRun) -> None:
        self.ask, self.run = ask, run
        self.backend = get_backend()
        self.depth = max(ask.limit, ask.candidates or settings.KNOWLEDGE_CANDIDATES_PER_LANE)
        self.fuser: Fuser = ask.stages.fuser or get_fuser()
        self.lanes: dict[str, int] = {}
        self.context = StageContext(
            query=Query(text=ask.text),
            scope=ask.scope,
            limit=ask.limit,
            budget=TokenBudget(settings.KNOWLEDGE_LLM_TOKEN_BUDGET),
            warnings=run.warnings,
            data=SearchData(),
        )

    def plan(self, query_stages: list[Stage]) -> list[PlannedQuery]:
        planned = [PlannedQuery(self.ask.text or "")]
        if query_stages and self.ask.text is not None:
            self.context.choices = scope_choices(self.ask.scope)
            planned = run_stages(query_stages, planned, self.context, self.run.traces, self.run) or planned
        return planned

    def fan_out(self, planned: list[PlannedQuery], hit_stages: list[Stage]) -> list[StageHit]:
        """The base retrieval per planned query (concurrently), merged; hydrated: a pool for hit stages
        that choose among the hits, else only the answer."""
        started = time.perf_counter()
        vectors = self._vectors(planned)
        results = self._retrieve_all(planned, vectors)
        for retrieved in results:
            for lane, count in retrieved.lanes.items():
                self.lanes[lane] = self.lanes.get(lane, 0) + count
        limit = self.ask.limit
        cap = max(limit * RERANK_POOL_FACTOR, limit)
        if len(planned) == 1:
            ranked = results[0].fused
            wanted = self._wanted(hit_stages, ranked[:cap], cap)
            pool = [to_stage_hit(f) for f in _first_hydrated(ranked, wanted, cap, hydrate_hits)]
        else:
            merged = merge_fanout(
                list(zip(planned, [r.fused for r in results], strict=True)), settings.KNOWLEDGE_FANOUT_RRF_K
            )
            window = [h.fused for h in merged[:cap] if h.fused is not None]
            pool = _first_hydrated(merged, self._wanted(hit_stages, window, cap), cap, _hydrated)
        self._trace_fanout(planned, pool, started)
        first = vectors[0].embedded if vectors[0] else None
        model = vectors[0].model if first is not None and vectors[0] else None
        self.context.query = Query(self.ask.text, tuple(first) if first is not None else None, model)
        return pool

    def _wanted(self, hit_stages: list[Stage], window: list[FusedHit], cap: int) -> int:
        """The pool when any hit stage may reorder or drop these hits, else just the answer."""
        choosing = any(not isinstance(s, HitStage) or s.reads_pool(window) for s in hit_stages)
        return cap if choosing else self.ask.limit

    def _retrieve(self, query: PlannedQuery, vq: VectorQuery | None) -> Retrieved:
        text = query.text or None
        request = LaneRequest(
            scope=narrow_scope(self.ask.scope, query.filters),
            lanes=self.ask.lanes,
            query_text=text if "keyword" in self.ask.lanes else None,
            vq=vq,
            depth=self.depth,
            text_hits=min(self.depth, LANE_TEXT_PER_RESULT * self.ask.limit),
        )
        return retrieve(self.run, self.backend, request, self.fuser)

    def _retrieve_all(
        self, planned: list[PlannedQuery], vectors: list[VectorQuery | None]
    ) -> list[Retrieved]:
        pairs = list(zip(planned, vectors, strict=True))
        if len(pairs) == 1 or connection.in_atomic_block:  # in a transaction: see its writes, one connection
            return [self._retrieve(q, v) for q, v in pairs]
        futures = [self.run.executor.query(self._retrieve, q, v) for q, v in pairs]
        try:
            return [self.run.wait(f) for f in futures]
        except DeadlinePassed:
            raise BackendUnavailable("the search's planned queries ran past its deadline") from None

    def _vectors(self, planned: list[PlannedQuery]) -> list[VectorQuery | None]:
        """The query vector of each planned query: the caller's for the question itself, else the
        active embedder's; one query is embedded in its vector lane, several in one batch here."""
        if "vector" not in self.ask.lanes:
            return [None] * len(planned)
        first = vector_query(self.run, self.ask.scope, self.ask.text, self.ask.embedding)
        if first is None or len(planned) == 1:
            return [first] + [None] * (len(planned) - 1)
        embedder = active_embedder()
        others = [q.text for q in planned[1:]]
        if first.given is not None:
            return [first, *_embedded_batch(embedder, others)]
        return _embedded_batch(embedder, [self.ask.text or "", *others])  # the question's vector stays first

    def _trace_fanout(self, planned: list[PlannedQuery], pool: list[StageHit], started: float) -> None:
        record = StageTrace("retrieval", "base", "fanout", queries_in=len(planned), queries_out=len(planned))
        record.hits_out = len(pool)
        record.duration_ms = (time.perf_counter() - started) * 1000
        record.preview = {
            "hits": [
                {"chunk_id": h.chunk_id, "score": round(h.score, 6), "content": h.content[:120]}
                for h in pool[:5]
            ]
        }
        self.run.traces.append(record)


def _pipeline(pipeline: Sequence[Stage] | None, stages: Stages) -> list[Stage]:
    chosen = list(pipeline) if pipeline is not None else list(_configured())
    if stages.reranker is not None or stages.compressor is not None or stages.token_budget is not None:
        chosen = [_override(stage, stages) for stage in chosen]
    return chosen


def _override(stage: Stage, stages: Stages) -> Stage:
    if isinstance(stage, RerankerStage) and stages.reranker is not None:
        return RerankerStage(instance=stages.reranker)
    if isinstance(stage, CompressorStage) and (stages.compressor is not None or stages.token_budget):
        return CompressorStage(instance=stages.compressor, token_budget=stages.token_budget)
    return stage


def _to_search_hit(hit: StageHit) -> SearchHit:
    fused = hit.fused
    assert fused is not None
    lane = fused.hit
    return SearchHit(
        chunk_id=hit.chunk_id,
        document_id=hit.document_id,
        chunk_index=hit.chunk_index,
        tenant_id=lane.tenant_id,
        title=lane.title or "",
        content=hit.content,
        source_url=lane.source_url or "",
        rrf_score=hit.score,
        similarity=fused.scores.get("vector"),
        text_rank=fused.scores.get("keyword"),
        lane_ranks=dict(fused.ranks),
        fusion_terms=dict(fused.terms),
        page=None if lane.page == PAGE_UNKNOWN else lane.page,
        parent_content=hit.parent_content,
        excerpts=hit.excerpts,
        matched_queries=hit.matched_queries,
        document_external_id=lane.document_external_id,
    )


def _embedded_batch(embedder: Embedder, texts: list[str]) -> list[VectorQuery | None]:
    """One vector query per text, embedded in one call; a failure is left to each vector lane to report."""
    try:
        vectors = embedder.embed_queries(texts)
    except EmbedderError as exc:
        return [VectorQuery(embedder.dimension, embedder.name, error=exc) for _ in texts]
    return [VectorQuery(embedder.dimension, embedder.name, given=list(v)) for v in vectors]


def _first_hydrated(items: list[H], wanted: int, cap: int, hydrate: Callable[[list[H]], list[H]]) -> list[H]:
    """The best `wanted` items with their text. Hydration drops a chunk deleted since the lanes ran; the
    next items then take its place, reading at most `cap` items in all."""
    kept: list[H] = []
    start, end_cap = 0, min(len(items), cap)
    while len(kept) < wanted and start < end_cap:
        end = min(start + wanted - len(kept), end_cap)
        kept += hydrate(items[start:end])
        start = end
    return kept


def _hydrated(hits: list[StageHit]) -> list[StageHit]:
    fused = hydrate_hits([h.fused for h in hits if h.fused is not None])
    by_id = {f.chunk_id: f for f in fused}
    return [
        replace(h, fused=by_id[h.chunk_id], content=by_id[h.chunk_id].hit.content or "")
        for h in hits
        if h.chunk_id in by_id
    ]
