"""The base retrieval of one query: vector and keyword lanes run concurrently, each under its own
timeout (the query is embedded in the vector lane, while the keyword lane runs); an external index's
hits are verified against PostgreSQL (and re-asked when verification thinned them out); the lanes are
then fused."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db import connection

from knowledge.errors import InvalidInput, ServiceUnavailable
from knowledge.pipeline.active import active_embedder
from knowledge.pipeline.embedders.base import CLIENT_MODEL, EmbedderError
from knowledge.pipeline.fusers.base import FusedHit, Fuser
from knowledge.selectors.hydration import with_lane_text
from knowledge.selectors.verification import verify_lanes
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
LANE_THREADS = 4
VERIFY_REFILLS = 2  # re-asks of a lane whose hits verification thinned out (4x, then 16x the depth)
_executor = ThreadPoolExecutor(max_workers=LANE_THREADS, thread_name_prefix="search-lane")


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
    backend: KnowledgeRetrievalBackend,
    scope: SearchScope,
    query_text: str | None,
    embedding: Sequence[float] | None,
    warnings: list[str],
) -> VectorQuery | None:
    if embedding is not None:
        return _caller_vector(backend, scope, list(embedding), warnings)
    embedder = active_embedder()
    if not has_embedding_model(scope.tenant_id, embedder.name):
        populated = populated_dimensions(scope.tenant_id, scope.connector_ids)
        warnings.append(
            f"vector lane skipped: no vectors of the active embedder {embedder.name!r} are indexed "
            f"(indexed dimensions: {', '.join(map(str, populated)) or 'none'}); see `manage.py doctor`"
        )
        return None
    assert query_text is not None
    text = query_text
    return VectorQuery(embedder.dimension, embedder.name, embed=lambda: embedder.embed_query(text))


def _caller_vector(
    backend: KnowledgeRetrievalBackend, scope: SearchScope, vector: list[float], warnings: list[str]
) -> VectorQuery:
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
        warnings.append(f"several models have {len(vector)}-dimensional vectors; searched those of {model!r}")
    elif model == active and CLIENT_MODEL in models:
        warnings.append(
            f"searched the active embedder's {len(vector)}-dimensional vectors ({active!r}); documents "
            "indexed with a caller-supplied embedding of that dimension are not among them"
        )
    return VectorQuery(len(vector), model, given=vector)


_lane_thread = threading.local()
LANE_CONNECTION_CHECK_SECONDS = 1.0


T = TypeVar("T")


def in_lane_thread(fn: Callable[[], T]) -> T:
    # Pool threads get no request signals, so they retire old or broken connections themselves; the
    # check costs a round trip (CONN_HEALTH_CHECKS), so at most once a second unless a query failed.
    now = time.monotonic()
    if (
        connection.errors_occurred
        or now - getattr(_lane_thread, "checked", 0.0) > LANE_CONNECTION_CHECK_SECONDS
    ):
        connection.close_if_unusable_or_obsolete()
        _lane_thread.checked = now
    return fn()


def close_lane_connections() -> None:
    """Close the database connection each lane thread keeps (before dropping a database, at shutdown)."""
    barrier = threading.Barrier(LANE_THREADS, timeout=10)

    def close() -> None:
        barrier.wait()  # every pool thread takes exactly one of these calls
        connection.close()

    for future in [_executor.submit(close) for _ in range(LANE_THREADS)]:
        future.result()


def _run_lanes(
    backend: KnowledgeRetrievalBackend, calls: dict[str, Callable[[], list[LaneHit]]], warnings: list[str]
) -> dict[str, list[LaneHit]]:
    """Run lanes concurrently (sequentially inside a transaction, so they see its writes)."""
    results: dict[str, list[LaneHit]] = {}
    inline = calls if connection.in_atomic_block else dict(list(calls.items())[:1])
    # The other lanes go to the pool; the first runs here meanwhile, on this thread's connection.
    futures = {name: _executor.submit(in_lane_thread, fn) for name, fn in calls.items() if name not in inline}
    outcomes: dict[str, Any] = {}
    for name, fn in inline.items():
        try:
            outcomes[name] = fn()
        except Exception as exc:  # classified below, like the pool's
            outcomes[name] = exc
    outcomes |= {name: (f.exception() or f.result()) for name, f in futures.items()}
    unembedded: list[EmbedderError] = []
    timed_out: list[BaseException] = []
    for name, outcome in outcomes.items():
        if isinstance(outcome, EmbedderError):
            logger.warning("%s lane left out: the query could not be embedded: %s", name, outcome)
            warnings.append(f"{name} lane left out: the query could not be embedded ({EMBEDDER_FAILED})")
            unembedded.append(outcome)
        elif isinstance(outcome, BaseException):
            if isinstance(outcome, LaneTimedOut):
                warnings.append(f"{name} lane timed out and was left out of the results")
                timed_out.append(outcome)
                continue
            raise outcome
        else:
            results[name] = outcome
    if timed_out and not results:  # nothing answered: an empty 200 would read as "no match"
        raise BackendUnavailable("every search lane timed out") from timed_out[0]
    if unembedded and not results:
        raise ServiceUnavailable(f"the query could not be embedded ({EMBEDDER_FAILED})") from unembedded[0]
    return results


def retrieve(
    *,
    backend: KnowledgeRetrievalBackend,
    scope: SearchScope,
    query_text: str | None,
    vq: VectorQuery | None,
    lanes: Sequence[str],
    depth: int,
    fuser: Fuser,
    warnings: list[str],
    text_hits: int = 0,
) -> Retrieved:
    """Run the lanes for one query within `scope` and fuse them; lanes that can read their first
    `text_hits` hits' text do so."""
    if scope.sees_nothing:
        return Retrieved(fused=[], lanes={})
    make_calls = _lane_calls(backend, scope, lanes, query_text, vq, warnings, text_hits)
    lane_hits = _run_lanes(backend, make_calls(depth), warnings)
    if is_external(backend):
        lane_hits = _verified(backend, scope, make_calls, depth, lane_hits, warnings)
    fused = with_lane_text(fuser.fuse(lane_hits), lane_hits)
    return Retrieved(fused=fused, lanes={name: len(hits) for name, hits in lane_hits.items()})


LaneCalls = Callable[[int], dict[str, Callable[[], list[LaneHit]]]]


def _lane_calls(
    backend: KnowledgeRetrievalBackend,
    scope: SearchScope,
    lanes: Sequence[str],
    query_text: str | None,
    vq: VectorQuery | None,
    warnings: list[str],
    text_hits: int = 0,
) -> LaneCalls:
    """The lanes to run, for a given depth (candidates per lane)."""

    def calls(depth: int) -> dict[str, Callable[[], list[LaneHit]]]:
        found: dict[str, Callable[[], list[LaneHit]]] = {}
        if vq is not None:
            found["vector"] = lambda: backend.vector_search(
                scope, vq.vector, vq.dimensions, depth, model=vq.model, text_hits=text_hits
            )
        if "keyword" in lanes and query_text is not None:
            found["keyword"] = _keyword_call(backend, scope, query_text, depth, warnings, text_hits)
        return found

    return calls


def _verified(
    backend: KnowledgeRetrievalBackend,
    scope: SearchScope,
    make_calls: LaneCalls,
    depth: int,
    lane_hits: dict[str, list[LaneHit]],
    warnings: list[str],
) -> dict[str, list[LaneHit]]:
    """Canonical verification of an external index's hits. Stale hits (deleted, re-permissioned,
    forged) are dropped, so a lane that came back full but lost hits is asked again for more, until
    it has `depth` verified hits or has no more to give."""
    verified, asked = verify_lanes(scope, lane_hits), depth
    for _ in range(VERIFY_REFILLS):
        short = [n for n, hits in verified.items() if len(hits) < depth and len(lane_hits[n]) >= asked]
        if not short:
            break
        asked *= 4
        more = _run_lanes(backend, {n: c for n, c in make_calls(asked).items() if n in short}, warnings)
        lane_hits.update(more)
        verified.update(verify_lanes(scope, more))
    return verified


def _keyword_call(
    backend: KnowledgeRetrievalBackend,
    scope: SearchScope,
    query_text: str,
    depth: int,
    warnings: list[str],
    text_hits: int,
) -> Callable[[], list[LaneHit]]:
    """The keyword lane, including its language and statistics look-ups (they run in the lane's thread)."""

    def lane() -> list[LaneHit]:
        languages = text_search_languages(scope.tenant_id, scope.connector_ids)
        warnings.extend(backend.keyword_warnings(scope.tenant_id, languages))
        return backend.keyword_search(scope, query_text, languages, depth, text_hits=text_hits)

    return lane
