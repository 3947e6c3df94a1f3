"""A document of many chunks is embedded and written in slices, in one transaction, vectors in order."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from knowledge.models import Chunk, ChunkEmbedding, Document
from knowledge.pipeline.active import active_embedder
from knowledge.pipeline.chunkers.base import ChunkSource
from knowledge.pipeline.registry import get_chunker
from knowledge.services import chunks as chunks_service
from knowledge.services.ingestion import SourceAcl, SourceDocument
from knowledge.services.writes import documents_write
from knowledge.services.writes import prepare as prepare_module
from knowledge.store.tables import CHUNK
from tests.factories import ConnectorFactory

pytestmark = pytest.mark.django_db

WORDS = [
    *("tide", "harbour", "ferry", "cargo", "crew", "pier"),
    *("night", "schedule", "lantern", "rope", "anchor", "deck"),
]


def long_text(sentences: int) -> str:
    return " ".join(
        " ".join(WORDS[(i + k) % len(WORDS)] for k in range(10)) + f" entry {i}." for i in range(sentences)
    )


def big_document(sentences: int = 600) -> SourceDocument:
    return SourceDocument(external_id="big", content=long_text(sentences), acl=SourceAcl(public=True))


@pytest.fixture
def small_slices(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Slices of 7 texts to embed and 11 chunks per insert; returns the sizes the embedder was asked for."""
    monkeypatch.setattr(prepare_module, "EMBED_SLICE", 7)
    monkeypatch.setattr(chunks_service, "INSERT_SLICE", 11)
    embedder, sizes = active_embedder(), []
    original = embedder.embed_batch

    def recording(texts: Sequence[str]) -> list[list[float]]:
        sizes.append(len(texts))
        return original(texts)

    monkeypatch.setattr(embedder, "embed_batch", recording)
    return sizes


def test_a_big_document_is_embedded_and_inserted_in_slices_with_each_vector_on_its_chunk(
    small_slices: list[int],
) -> None:
    connector = ConnectorFactory.create()
    with CaptureQueriesContext(connection) as queries:
        stats = documents_write(connector=connector, documents=[big_document()], strict=True)
    chunks = list(Chunk.objects.filter(document__external_id="big").order_by("chunk_index"))
    assert stats.chunks == len(chunks) > 30
    assert max(small_slices) == 7 and sum(small_slices) == len(chunks)
    inserts = [q for q in queries.captured_queries if q["sql"].lstrip().startswith(f"INSERT INTO {CHUNK}\n")]
    assert len(inserts) == -(-len(chunks) // 11)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    # Every stored vector is its own chunk's (float32, as pgvector keeps it), whatever slice it came in.
    stored = {
        e.chunk_id: np.array(e.vector_values()) for e in ChunkEmbedding.objects.filter(chunk__in=chunks)
    }
    source = big_document()
    texts = [c.text for c in get_chunker().chunk(ChunkSource(source.title, source.content, {}))]
    expected = prepare_module.embedded(active_embedder(), texts)
    assert len(expected) == len(chunks)
    for chunk, vector in zip(chunks, expected, strict=True):
        assert np.allclose(stored[chunk.id], vector, atol=1e-7), chunk.chunk_index
    assert not np.allclose(stored[chunks[0].id], stored[chunks[1].id])


def test_a_failure_in_a_later_slice_leaves_nothing_of_the_document(
    small_slices: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    connector = ConnectorFactory.create()
    calls = {"n": 0}
    original = chunks_service.index_embeddings

    def failing_third(updates: Sequence[object], dimensions: int) -> int:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("the database went away mid-document")
        return original(updates, dimensions)  # type: ignore[arg-type]

    monkeypatch.setattr(chunks_service, "index_embeddings", failing_third)
    with pytest.raises(RuntimeError):
        documents_write(connector=connector, documents=[big_document()], strict=True)
    assert calls["n"] == 3
    assert not Document.objects.filter(connector=connector).exclude(content="").exists()
    assert not Chunk.objects.filter(connector=connector).exists()
    assert not ChunkEmbedding.objects.filter(chunk__connector=connector).exists()
