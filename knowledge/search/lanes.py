"""The base retrieval of one planned query: vector and keyword lanes run concurrently, each under its
own timeout (the query is embedded in the vector lane, while the keyword lane runs); an external
index's hits are verified against PostgreSQL (and re-asked when verification thinned them out); the
lanes are then fused."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from knowledge.errors import InvalidInput, ServiceUnavailable
from knowledge.pipeline.active import active_embedder
from knowledge.pipeline.embedders.base import CLIENT_MODEL, EmbedderError
from knowledge.pipeline.fusers.base import FusedHit, Fuser
from knowledge.search.hydrate import with_lane_text
from knowledge.search.run import DeadlinePassed, SearchRun
from knowledge.search.verify import verify_lanes
from knowledge.store.lookups import (
    embedding_models_of,
    has_embedding_model,
    populated_dimensions,
    text_search_languages,
)
from retrieval_backends.base import BackendUnavailable, KnowledgeRetrievalBackend, LaneTimedOut, is_external
from retrieval_backends.types import LaneHit, SearchScope

logger = logging.getLogger(__name__)

LANES = ("vector", "keyword")
EMBEDDER_FAILED = "the embedding service failed; the server log has the details"
VERIFY_REFILLS = 2  # re-asks of a lane whose hits verification thinned out (4x, then 16x the depth)
Lane = Callable[[], list[LaneHit]]


@dataclass(frozen=True)
class Retrieved:
    """One query's fused hits (best first), and how many hits each lane gave."""

    fused: list[FusedHit]
    lanes: dict[str, int]


@dataclass
class VectorQuery:
    """A query vector: given, or embedded on first use (once; a failure is remembered too)."""

    dimensions: int
    model: str | None
    given: list[float] | None = None
    embed: Callable[[], list[float]] | None = None
    error: EmbedderError | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def vector(self) -> list[float]:
        """The vector; raises EmbedderError when the query could not be embedded."""
        with self._lock:
            if self.given is None and self.error is None:
                assert self.embed is not None
                try:
                    self.given = self.embed()
                except EmbedderError as exc:
                    self.error = exc
            if self.error is not None:
                raise self.error
            assert self.given is not None
            return self.given

    @property
    def embedded(self) -> list[float] | None:
        """The vector, or None when embedding failed (the lane has said so in a warning)."""
        try:
            return self.vector
        except EmbedderError:
            return None


def vector_query(
    run: SearchRun, scope: SearchScope, query_text: str | None, embedding: Sequence[float] | None
) -> VectorQuery | None:
    """The query's vector: the caller's, or the active embedder's (None, with a warning, when no
    vector of that embedder is indexed)."""
    if embedding is not None:
        return _caller_vector(run, scope, list(embedding))
    embedder = active_embedder()
    if not has_embedding_model(scope.tenant_id, embedder.name):
        populated = populated_dimensions(scope.tenant_id, scope.connector_ids)
        run.warn(
            f"vector lane skipped: no vectors of the active embedder {embedder.name!r} are indexed "
            f"(indexed dimensions: {', '.join(map(str, populated)) or 'none'}); see `manage.py doctor`"
        )
        return None
    assert query_text is not None
    text = query_text
    return VectorQuery(embedder.dimension, embedder.name, embed=lambda: embedder.embed_query(text))


def _caller_vector(run: SearchRun, scope: SearchScope, vector: list[float]) -> VectorQuery:
    """A caller's query vector searches one model's vectors of its dimension: the active embedder's,
    else caller-supplied ones, else the only model there is; vectors of two models never mix."""
    stored = embedding_models_of(scope.tenant_id)
    models = sorted(model for dimensions, model in stored if dimensions == len(vector))
    if not models:
        populated = sorted({dimensions for dimensions, _ in stored})
        raise InvalidInput(
            f"the query vector has {len(vector)} dimensions, but the indexed vectors have "
            f"{', '.join(map(str, populated)) or 'none'}",
            field="embedding",
        )
    active = active_embedder().name
    preferred = [m for m in (active, CLIENT_MODEL) if m in models]
    model = preferred[0] if preferred else models[0]
    if not preferred and len(models) > 1:
        run.warn(f"several models have {len(vector)}-dimensional vectors; searched those of {model!r}")
    elif model == active and CLIENT_MODEL in models:
        run.warn(
            f"searched the active embedder's {len(vector)}-dimensional vectors ({active!r}); documents "
            "indexed with a caller-supplied embedding of that dimension are not among them"
        )
    return VectorQuery(len(vector), model, given=vector)


@dataclass(frozen=True)
class LaneRequest:
    """What one planned query asks of the lanes."""

    scope: SearchScope
    lanes: Sequence[str]
    query_text: str | None
    vq: VectorQuery | None
    depth: int
    text_hits: int = 0


def retrieve(
    run: SearchRun, backend: KnowledgeRetrievalBackend, request: LaneRequest, fuser: Fuser
) -> Retrieved:
    """Run the lanes of one query and fuse them; lanes read the text of their first `text_hits` hits."""
    if request.scope.sees_nothing:
        return Retrieved(fused=[], lanes={})
    lane_hits = _run_lanes(run, _lane_calls(run, backend, request, request.depth))
    if is_external(backend):
        lane_hits = _verified(run, backend, request, lane_hits)
    fused = with_lane_text(fuser.fuse(lane_hits), lane_hits)
    return Retrieved(fused=fused, lanes={name: len(hits) for name, hits in lane_hits.items()})


def _lane_calls(
    run: SearchRun, backend: KnowledgeRetrievalBackend, request: LaneRequest, depth: int
) -> dict[str, Lane]:
    """The lanes to run at this depth (candidates per lane)."""
    scope, vq, found = request.scope, request.vq, {}
    if vq is not None:
        found["vector"] = lambda: backend.vector_search(
            scope, vq.vector, vq.dimensions, depth, model=vq.model, text_hits=request.text_hits
        )
    if "keyword" in request.lanes and request.query_text is not None:
        text = request.query_text

        def keyword() -> list[LaneHit]:  # the language look-up runs in the lane's thread too
            languages = text_search_languages(scope.tenant_id, scope.connector_ids)
            run.warnings.extend(backend.keyword_warnings(scope.tenant_id, languages))
            return backend.keyword_search(scope, text, languages, depth, text_hits=request.text_hits)

        found["keyword"] = keyword
    return found


def _run_lanes(run: SearchRun, calls: dict[str, Lane]) -> dict[str, list[LaneHit]]:
    """Run lanes concurrently (sequentially inside a transaction, so they see its writes): the first
    on this thread's connection, the others on the run's executor meanwhile."""
    inline = calls if connection.in_atomic_block else dict(list(calls.items())[:1])
    futures = {name: run.executor.lane(fn) for name, fn in calls.items() if name not in inline}
    outcomes: dict[str, Any] = {}
    for name, fn in inline.items():
        try:
            outcomes[name] = fn()
        except Exception as exc:  # classified below, like the pool's
            outcomes[name] = exc
    for name, future in futures.items():
        try:
            outcomes[name] = run.wait(future)
        except DeadlinePassed as exc:
            outcomes[name] = exc
        except Exception as exc:  # classified below
            outcomes[name] = exc
    return _classified(run, outcomes)


def _classified(run: SearchRun, outcomes: dict[str, Any]) -> dict[str, list[LaneHit]]:
    """Lanes' hits; a lane that timed out (or passed the deadline) or could not embed is left out with
    a warning; nothing at all is a 503; any other error fails the search."""
    results: dict[str, list[LaneHit]] = {}
    unembedded: list[EmbedderError] = []
    timed_out: list[BaseException] = []
    for name, outcome in outcomes.items():
        if isinstance(outcome, EmbedderError):
            logger.warning("%s lane left out: the query could not be embedded: %s", name, outcome)
            run.warn(f"{name} lane left out: the query could not be embedded ({EMBEDDER_FAILED})")
            unembedded.append(outcome)
        elif isinstance(outcome, LaneTimedOut | DeadlinePassed):
            reason = "timed out" if isinstance(outcome, LaneTimedOut) else "ran past the search's deadline"
            run.warn(f"{name} lane {reason} and was left out of the results")
            timed_out.append(outcome)
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            results[name] = outcome
    if timed_out and not results:  # nothing answered: an empty 200 would read as "no match"
        raise BackendUnavailable("every search lane timed out") from timed_out[0]
    if unembedded and not results:
        raise ServiceUnavailable(f"the query could not be embedded ({EMBEDDER_FAILED})") from unembedded[0]
    return results


def _verified(
    run: SearchRun,
    backend: KnowledgeRetrievalBackend,
    request: LaneRequest,
    lane_hits: dict[str, list[LaneHit]],
) -> dict[str, list[LaneHit]]:
    """Canonical verification of an external index's hits. Stale hits (deleted, re-permissioned,
    forged) are dropped, so a lane that came back full but lost hits is asked again for more, until
    it has `depth` verified hits or has no more to give."""
    depth = request.depth
    verified, asked = verify_lanes(request.scope, lane_hits), depth
    for _ in range(VERIFY_REFILLS):
        short = [n for n, hits in verified.items() if len(hits) < depth and len(lane_hits[n]) >= asked]
        if not short:
            break
        asked *= 4
        calls = _lane_calls(run, backend, request, asked)
        more = _run_lanes(run, {n: c for n, c in calls.items() if n in short})
        lane_hits.update(more)
        verified.update(verify_lanes(request.scope, more))
    return verified
