"""Keep one HNSW index per tenant whose vectors outgrow exact scans, and none for the others.

The vector lane ranks a scope exactly when it sees few rows and walks its tenant's own graph
otherwise (`knowledge.store.search.vector`); this service decides which graphs exist. A tenant's
space (tenant, dimension, storage) gets an index once it holds more than `min_vectors` rows, and
loses it below half that, so a tenant hovering at the threshold is not rebuilt over and over.
Builds run `CONCURRENTLY`: writes to every tenant go on while a graph is built, and a build that
fails leaves an invalid index, dropped and built again on the next run. One run at a time
(an advisory lock); the biggest missing space first, as it gains most from its graph.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import connection

from knowledge.store import vector_indexes as store
from knowledge.store.advisory import try_lock, unlock
from knowledge.store.lookup_cache import LookupCache
from retrieval_backends.postgres import PostgresRetrievalBackend
from retrieval_backends.registry import get_backend

logger = logging.getLogger(__name__)
LOCK_KEY = 0x6B62_1D5D  # "kb" per-tenant vector index maintenance


@dataclass(frozen=True)
class IndexPlan:
    """What a run would do: spaces to index (with their row counts) and index names to drop."""

    create: list[tuple[store.VectorSpace, int]]
    drop: list[str]
    keep: list[str]


@dataclass
class IndexReport:
    created: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: bool = False  # another run holds the lock
    seconds: float = 0.0


def vector_index_plan(*, min_vectors: int) -> IndexPlan:
    """Compare the tenants' vector counts with the indexes in the catalog."""
    counts = store.vector_counts()
    existing = store.tenant_indexes()
    create, drop, keep = [], [], []
    for name, index in sorted(existing.items()):
        rows = counts.get(index.space, 0)
        if not index.valid or rows < min_vectors / 2 or not index.space.indexable:
            drop.append(name)  # an invalid one is built again below, if still wanted
        else:
            keep.append(name)
    for space, rows in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        wanted = rows > min_vectors and space.indexable
        if wanted and (space.index_name not in existing or not existing[space.index_name].valid):
            create.append((space, rows))
    return IndexPlan(create=create, drop=drop, keep=keep)


def vector_indexes_maintain(
    *,
    min_vectors: int,
    time_budget: float | None = None,
    on_build: Callable[[store.VectorSpace, int], None] | None = None,
) -> IndexReport:
    """Drop the unwanted or broken per-tenant indexes, then build the missing ones (biggest first),
    until `time_budget` seconds have passed (a build under way always finishes)."""
    started, report = time.monotonic(), IndexReport()
    concurrently = not connection.in_atomic_block
    if concurrently and not try_lock(LOCK_KEY):
        report.skipped = True
        return report
    try:
        plan = vector_index_plan(min_vectors=min_vectors)
        for name in plan.drop:
            store.drop_index(name, concurrently=concurrently)
            report.dropped.append(name)
        for space, rows in plan.create:
            if time_budget is not None and time.monotonic() - started > time_budget:
                break
            if on_build:
                on_build(space, rows)
            _build(space, rows, concurrently, report)
    finally:
        if concurrently:
            unlock(LOCK_KEY)
        LookupCache.written_everywhere()  # the lane's list of usable indexes
    report.seconds = time.monotonic() - started
    return report


def _build(space: store.VectorSpace, rows: int, concurrently: bool, report: IndexReport) -> None:
    try:
        store.create_index(space, rows=rows, concurrently=concurrently)
    except Exception as exc:  # one space's failure (disk, a cancelled build) must not stop the others
        if not concurrently:
            raise
        logger.exception("building %s failed", space.index_name)
        report.failed[space.index_name] = str(exc)
        return
    report.created.append(space.index_name)


def serving_threshold() -> int | None:
    """The serving backend's per-tenant index threshold; None when it does not search PostgreSQL's
    vectors (an external index holds its own graphs)."""
    backend = get_backend()
    return backend.tenant_index_min_vectors if isinstance(backend, PostgresRetrievalBackend) else None


def serving_vector_indexes_maintain(**options: object) -> IndexReport | None:
    """`vector_indexes_maintain` at the serving backend's threshold; None when there is none."""
    threshold = serving_threshold()
    if threshold is None:
        return None
    return vector_indexes_maintain(min_vectors=threshold, **options)  # type: ignore[arg-type]
