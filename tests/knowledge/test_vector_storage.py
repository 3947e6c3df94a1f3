"""KNOWLEDGE_VECTOR_STORAGE=halfvec: the reindex converts the stored vectors (no embedding) and switches;
searches and new writes then use half-precision vectors at half the bytes, and switching back works."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from knowledge.models import ChunkEmbedding
from knowledge.pipeline import active
from knowledge.pipeline.active import active_embedder, forget_active_embedder
from knowledge.pipeline.embedders.storage import HalfPrecision, split_spec, with_storage
from knowledge.search import search_chunks
from knowledge.services.documents import document_upsert
from retrieval_backends.types import SearchScope
from tests.factories import ConnectorFactory

pytestmark = pytest.mark.django_db
TEXTS = ["red apples grow on trees", "blue whales swim in oceans", "green tea is brewed hot",
         "yellow taxis in new york", "purple grapes make wine", "orange cats sleep all day"]  # fmt: skip


@pytest.fixture
def scope() -> SearchScope:
    connector = ConnectorFactory.create()
    for i, text in enumerate(TEXTS):
        document_upsert(connector=connector, external_id=f"d{i}", content=text, is_public=True)
    return SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))


def vector_order(scope: SearchScope, text: str) -> list[str]:
    return [h.content for h in search_chunks(scope=scope, query_text=text, lanes=["vector"], limit=6).hits]


def column_bytes(model: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT sum(coalesce(pg_column_size(embedding), 0) "
            "+ coalesce(pg_column_size(embedding_half), 0)) "
            "FROM knowledge_chunkembedding WHERE model = %s",
            [model],
        )
        return int(cursor.fetchone()[0])


def test_specs_carry_the_storage() -> None:
    assert split_spec("local@halfvec") == ("local", "halfvec") and split_spec("local") == ("local", "vector")
    assert with_storage("local", "halfvec") == "local@halfvec" == with_storage("local@halfvec", "halfvec")
    assert with_storage("local@halfvec", "vector") == "local"


def test_switching_to_halfvec_converts_without_embedding_and_back(
    scope: SearchScope, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = active_embedder().name
    before = {text: vector_order(scope, text) for text in TEXTS}
    settings.KNOWLEDGE_VECTOR_STORAGE = "halfvec"

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a storage switch must convert the stored vectors, not embed them again")

    monkeypatch.setattr(
        type(active.embedder_for(split_spec(active.configured_spec())[0])), "embed_batch", refuse
    )
    out = io.StringIO()
    call_command("reindex", "--prune", "--compare", "0", stdout=out, stderr=io.StringIO())
    monkeypatch.undo()
    half = f"{full}@halfvec"
    embedder = active_embedder()
    assert isinstance(embedder, HalfPrecision) and embedder.name == half
    rows = ChunkEmbedding.objects.filter(tenant_id=scope.tenant_id)
    assert set(rows.values_list("model", flat=True)) == {half}
    assert (
        not rows.filter(embedding_half__isnull=True).exists()
        and not rows.filter(embedding__isnull=False).exists()
    )
    # Same neighbours in the same order (a 2-byte float keeps about 3 significant digits).
    assert {text: vector_order(scope, text) for text in TEXTS} == before
    # New writes are stored at half precision too.
    connector = ConnectorFactory.create(tenant_id=scope.tenant_id)
    document_upsert(connector=connector, external_id="new", content="silver trains at night", is_public=True)
    assert ChunkEmbedding.objects.get(chunk__document__external_id="new").model == half
    halved = column_bytes(half)
    settings.KNOWLEDGE_VECTOR_STORAGE = "vector"
    forget_active_embedder()
    call_command("reindex", "--prune", stdout=out, stderr=io.StringIO())
    assert set(ChunkEmbedding.objects.values_list("model", flat=True)) == {full}
    assert halved < 0.6 * column_bytes(full)
    assert vector_order(scope, TEXTS[1])[0] == TEXTS[1]
