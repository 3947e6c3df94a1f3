"""Blue/green re-embedding: backfill a new model's vectors beside the old ones, then switch atomically.

Search keeps using the active model's vectors during the backfill (vectors are stored per model).
The backfill walks chunks in id order and skips chunks that already have the new model's vector,
so it resumes where it stopped after a crash. The switch locks the chunk table against inserts,
embeds any chunk ingested meanwhile, and records the new active embedder in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from knowledge.models import ActiveEmbedder, ReindexJob
from knowledge.pipeline.active import embedder_for, forget_active_embedder
from knowledge.pipeline.embedders.base import Embedder
from knowledge.pipeline.embedders.storage import HalfPrecision
from knowledge.services.chunks import CLIENT_MODEL
from knowledge.store import vectors as stored
from knowledge.store.chunks import lock_chunk_writes
from retrieval_backends.types import HALFVEC_SUFFIX, EmbeddingUpdate


def reindex_job_for(*, spec: str) -> ReindexJob:
    """The running job for this embedder (resumed), or a new one."""
    embedder = embedder_for(spec)
    job = ReindexJob.objects.filter(status=ReindexJob.Status.RUNNING, model=embedder.name).first()
    if job is None:
        job = ReindexJob.objects.create(spec=spec, model=embedder.name, dimension=embedder.dimension)
    return job


def chunks_missing(*, model: str) -> int:
    return stored.count_chunks_missing_embedding(model)


def _embed_batch(embedder: Embedder, after_id: int, batch_size: int) -> tuple[int, int]:
    """Embed the next chunks lacking this model's vector; returns (count, last chunk id)."""
    rows = stored.chunks_missing_embedding(embedder.name, after_id, batch_size)
    if not rows:
        return 0, after_id
    vectors = embedder.embed_batch([content for _, content in rows])
    updates = [
        EmbeddingUpdate(chunk_id=i, vector=tuple(v), model=embedder.name)
        for (i, _), v in zip(rows, vectors, strict=True)
    ]
    stored.index_embeddings(updates, embedder.dimension)
    return len(rows), rows[-1][0]


def same_vectors_model(embedder: Embedder) -> str | None:
    """The stored model key holding this embedder's vectors at the other precision, if any: its
    vectors are converted instead of embedded again."""
    other = embedder.inner.name if isinstance(embedder, HalfPrecision) else embedder.name + HALFVEC_SUFFIX
    return other if stored.model_is_stored(other) else None


def _convert_all(embedder: Embedder, batch_size: int, on_progress: Callable[[int], None] | None) -> int:
    source = same_vectors_model(embedder)
    if source is None:
        return 0
    last_id, total = 0, 0
    while True:
        read, last_id = stored.convert_embeddings(source, embedder.name, last_id, batch_size)
        if not read:
            return total
        total += read
        if on_progress:
            on_progress(read)


def reindex_backfill(
    *, job: ReindexJob, batch_size: int = 64, on_progress: Callable[[int], None] | None = None
) -> int:
    """Give every chunk a vector of the job's model (converted from the same model's vectors at the
    other precision where there are some, else embedded); returns how many were written now."""
    embedder, last_id = embedder_for(job.spec), 0
    total = _convert_all(embedder, max(batch_size, 1000), on_progress)
    while True:
        count, last_id = _embed_batch(embedder, last_id, batch_size)
        if not count:
            return total
        total += count
        ReindexJob.objects.filter(pk=job.pk).update(embedded=job.embedded + total)
        if on_progress:
            on_progress(count)


def reindex_switch(*, job: ReindexJob) -> None:
    """Make the job's embedder active once every chunk has its vector (stragglers embedded here)."""
    embedder = embedder_for(job.spec)
    with transaction.atomic():
        lock_chunk_writes()  # no chunk is written until we commit
        _convert_all(embedder, 1000, None)
        while _embed_batch(embedder, 0, 256)[0]:
            pass
        ActiveEmbedder.objects.update_or_create(
            pk=ActiveEmbedder.SINGLETON_ID,
            defaults={"spec": job.spec, "model": embedder.name, "dimension": embedder.dimension},
        )
        ReindexJob.objects.filter(pk=job.pk).update(
            status=ReindexJob.Status.SWITCHED, finished_at=timezone.now()
        )
    forget_active_embedder()


def reindex_prune(*, keep_model: str) -> int:
    """Delete vectors of every other model (caller-supplied vectors are kept); returns the count."""
    return stored.prune_embeddings([keep_model, CLIENT_MODEL])
