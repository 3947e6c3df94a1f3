"""Blue/green index rebuild: fill a new generation from PostgreSQL, then swap every alias at once.

Searches keep using the serving generation until the swap. Pushes wait meanwhile (the exclusive
index lock), so nothing reaches an index about to be dropped; a document changed after the rebuild
read it keeps a higher version than the one marked pushed, and the reconciler brings the new
generation up to date as soon as the lock is released. Tombstones are never spent by the rebuild:
which deletions its read saw depends on commit order, not on a tombstone's timestamp (the start of
the deleting transaction), so every pending one is applied to the new generation afterwards, where
its version beats whatever the rebuild copied.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from knowledge.models import ChunkEmbedding, Document
from knowledge.services.index_sync.locks import index_exclusive
from knowledge.services.index_sync.snapshot import read_snapshot
from knowledge.store.sync_marks import mark_clean
from retrieval_backends.base import BackendError, ExternalIndex
from retrieval_backends.registry import get_backend
from retrieval_backends.types import vector_storage


class RebuildFailed(BackendError):
    """The new generation could not be filled; the serving one is untouched."""


@dataclass
class RebuildStats:
    generation: int | None = None
    documents: int = 0
    message: str = ""


def index_rebuild(*, batch_size: int = 200, on_progress: Callable[[int], None] | None = None) -> RebuildStats:
    backend = get_backend()
    if not isinstance(backend, ExternalIndex):
        return RebuildStats(
            message=f"the {backend.name} backend searches PostgreSQL itself; nothing to rebuild"
        )
    with index_exclusive() as held:
        if not held:
            raise RebuildFailed("pushes kept the index busy for a minute; try again")
        dimensions = sorted(set(ChunkEmbedding.objects.values_list("dimensions", flat=True).distinct()))
        models = ChunkEmbedding.objects.values_list("model", flat=True).distinct()
        storages = sorted({vector_storage(model) for model in models}) or ["vector"]
        generation = backend.start_index_generation(dimensions, storages=storages)
        try:
            count = _fill(backend, generation, batch_size, on_progress)
            backend.activate_index_generation(generation)
        except Exception:
            backend.abandon_index_generation(generation)
            raise
    return RebuildStats(generation, count, f"generation {generation} serves {count} documents")


def _fill(
    backend: ExternalIndex, generation: int, batch_size: int, on_progress: Callable[[int], None] | None
) -> int:
    last, count = 0, 0
    while ids := list(
        Document.objects.filter(pk__gt=last).order_by("pk").values_list("pk", flat=True)[:batch_size]
    ):
        snapshot = read_snapshot(document_ids=ids, with_chunks=True)
        failures = backend.sync_document_access(snapshot.states, generation=generation)
        if failures:
            first = next(iter(failures.items()))
            raise RebuildFailed(
                f"{len(failures)} documents could not be written, e.g. {first[0]}: {first[1]}"
            )
        mark_clean(snapshot.versions)
        last, count = ids[-1], count + len(snapshot.states)
        if on_progress:
            on_progress(len(ids))
    return count
