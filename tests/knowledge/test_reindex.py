"""Blue/green re-embedding: search serves old vectors during the backfill, new ones after the switch."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from knowledge.models import ActiveEmbedder, ChunkEmbedding, ReindexJob
from knowledge.pipeline.active import active_embedder
from knowledge.search import search_chunks
from knowledge.selectors.reindex import QUERY_WORDS, models_overlap
from knowledge.services.documents import document_upsert
from knowledge.services.reindex import (
    chunks_missing,
    reindex_backfill,
    reindex_job_for,
    reindex_prune,
    reindex_switch,
)
from retrieval_backends.types import SearchScope
from tests.factories import ConnectorFactory
from tests.knowledge.plugins import Hashing256Embedder

pytestmark = pytest.mark.django_db
NEW = "tests.knowledge.plugins.Hashing256Embedder"
TEXTS = [
    "red apples grow on trees",
    "blue whales swim in oceans",
    "green tea is brewed hot",
    "yellow taxis in new york",
    "purple grapes make wine",
    "orange cats sleep all day",
]


@pytest.fixture
def scope() -> SearchScope:
    connector = ConnectorFactory.create()
    for i, text in enumerate(TEXTS):
        document_upsert(connector=connector, external_id=f"d{i}", content=text, is_public=True)
    return SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))


def top_vector_hit(scope: SearchScope, text: str) -> tuple[str, float | None]:
    hit = search_chunks(scope=scope, query_text=text, lanes=["vector"], limit=1).hits[0]
    return hit.content, hit.similarity


def test_search_serves_old_vectors_during_backfill_and_new_ones_after_switch(scope: SearchScope) -> None:
    old_model = active_embedder().name
    job = reindex_job_for(spec=NEW)
    seen: list[tuple[str, float | None, str]] = []

    def search_meanwhile(_: int) -> None:
        content, similarity = top_vector_hit(scope, "blue whales")
        seen.append((content, similarity, active_embedder().name))

    assert reindex_backfill(job=job, batch_size=2, on_progress=search_meanwhile) == len(TEXTS)
    assert len(seen) == 3
    assert all(
        content.endswith("blue whales swim in oceans") and model == old_model for content, _, model in seen
    )
    reindex_switch(job=job)
    assert active_embedder().name == "hashing-sha256-256"
    assert ActiveEmbedder.objects.get().spec == NEW
    content, similarity = top_vector_hit(scope, "blue whales")
    new = Hashing256Embedder()
    expected = sum(a * b for a, b in zip(new.embed("blue whales"), new.embed(content), strict=True))
    assert content.endswith("blue whales swim in oceans") and similarity == pytest.approx(expected, abs=1e-6)
    assert ReindexJob.objects.get(pk=job.pk).status == ReindexJob.Status.SWITCHED


def test_backfill_resumes_after_a_crash(scope: SearchScope) -> None:
    job = reindex_job_for(spec=NEW)

    def crash(_: int) -> None:
        raise RuntimeError("worker killed")

    with pytest.raises(RuntimeError):
        reindex_backfill(job=job, batch_size=2, on_progress=crash)
    assert chunks_missing(model="hashing-sha256-256") == len(TEXTS) - 2
    assert reindex_job_for(spec=NEW).pk == job.pk  # the running job is resumed
    assert reindex_backfill(job=job, batch_size=2) == len(TEXTS) - 2
    assert chunks_missing(model="hashing-sha256-256") == 0


def test_documents_ingested_during_backfill_are_embedded_at_the_switch(scope: SearchScope) -> None:
    job = reindex_job_for(spec=NEW)
    reindex_backfill(job=job)
    connector = ConnectorFactory.create(tenant_id=scope.tenant_id)
    document_upsert(connector=connector, external_id="late", content="late arrival", is_public=True)
    assert chunks_missing(model="hashing-sha256-256") == 1
    reindex_switch(job=job)
    assert chunks_missing(model="hashing-sha256-256") == 0


def test_command_switches_and_prunes(scope: SearchScope) -> None:
    out = io.StringIO()
    call_command("reindex", "--embedder", NEW, "--prune", stdout=out, stderr=io.StringIO())
    assert "is now the active embedder" in out.getvalue()
    assert set(ChunkEmbedding.objects.values_list("model", flat=True)) == {"hashing-sha256-256"}
    assert reindex_prune(keep_model="hashing-sha256-256") == 0


def _top(model: str, tenant_id: int, vector: list[float], k: int) -> set[int]:
    """The brute-force k nearest chunks by cosine distance (vectors are L2-normalised)."""
    rows = [
        (e.chunk_id, e.vector_values())
        for e in ChunkEmbedding.objects.filter(tenant_id=tenant_id, model=model)
    ]
    scored = sorted(rows, key=lambda row: -sum(a * b for a, b in zip(row[1], vector, strict=True)))
    return {chunk_id for chunk_id, _ in scored[:k]}


def test_models_overlap_matches_a_brute_force_comparison(scope: SearchScope) -> None:
    """Each sample query is a chunk's opening words, so its own chunk is both models' nearest (k=1;
    beyond it the hashing vectors of unrelated texts tie near zero, in any order)."""
    old, new = active_embedder(), Hashing256Embedder()
    assert models_overlap(old=old, new=new, sample=20, k=1).queries == 0  # no new vectors yet
    reindex_backfill(job=reindex_job_for(spec=NEW))
    overlap = models_overlap(old=old, new=new, sample=20, k=1)
    assert overlap.queries == len(TEXTS)  # every chunk holds both models' vectors
    for text in TEXTS:
        query = " ".join(text.split()[:QUERY_WORDS])
        before = _top(old.name, scope.tenant_id, old.embed_queries([query])[0], 1)
        after = _top(new.name, scope.tenant_id, new.embed_queries([query])[0], 1)
        assert before == after
    assert overlap.mean == overlap.lowest == 1.0


def test_command_reports_the_overlap_and_refuses_to_switch_below_the_floor(scope: SearchScope) -> None:
    before = active_embedder().name
    out = io.StringIO()
    with pytest.raises(CommandError, match="below --min-overlap"):
        call_command("reindex", "--embedder", NEW, "--min-overlap", "1.01", stdout=out, stderr=io.StringIO())
    assert f"{len(TEXTS)} sample queries: the top 10 of hashing-sha256-256 share" in out.getvalue()
    assert active_embedder().name == before
    assert chunks_missing(model="hashing-sha256-256") == 0  # the new vectors are kept for the next run
    call_command("reindex", "--embedder", NEW, stdout=io.StringIO(), stderr=io.StringIO())
    assert active_embedder().name == "hashing-sha256-256"
