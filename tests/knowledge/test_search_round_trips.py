"""Round trips per search: look-ups are cached (and forgotten on writes), lanes take one message each."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from knowledge.pipeline.active import active_embedder
from knowledge.search import search_chunks
from knowledge.search.data import SearchData
from knowledge.services.documents import document_upsert
from knowledge.store import lookups
from retrieval_backends.registry import get_backend
from retrieval_backends.types import SearchScope
from tests.factories import ConnectorFactory
from tests.plugins import plugin_options

pytestmark = pytest.mark.django_db

DOCS = {
    "cats": "Cats are small carnivorous mammals that purr and hunt mice.",
    "dogs": "Dogs are loyal companions that bark and fetch sticks.",
    "ships": "Container ships carry freight across the ocean.",
}


@pytest.fixture
def connector():  # type: ignore[no-untyped-def]
    connector = ConnectorFactory.create()
    for key, text in DOCS.items():
        document_upsert(connector=connector, external_id=key, title=key, content=text, is_public=True)
    return connector


@pytest.fixture
def scope(connector):  # type: ignore[no-untyped-def]
    return SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))


def test_a_hybrid_search_takes_at_most_three_statements_plus_one_per_lane(  # type: ignore[no-untyped-def]
    scope, django_assert_max_num_queries
) -> None:
    search_chunks(scope=scope, query_text="cats purr")  # the first search fills the look-up cache
    with django_assert_max_num_queries(3 + 2):
        result = search_chunks(scope=scope, query_text="cats purr")
    assert result.lanes["vector"] > 0 and result.lanes["keyword"] > 0
    assert result.warnings == []
    vector = active_embedder().embed("cats purr")
    with django_assert_max_num_queries(3 + 2):
        result = search_chunks(scope=scope, query_text="cats purr", query_embedding=vector)
    assert result.lanes["vector"] > 0 and result.lanes["keyword"] > 0


def test_a_write_in_this_process_is_seen_by_the_next_search(connector, scope) -> None:  # type: ignore[no-untyped-def]
    assert search_chunks(scope=scope, query_text="zebra", lanes=["keyword"]).hits == []
    document_upsert(
        connector=connector,
        external_id="zebra",
        content="zebra stripes",
        is_public=True,
        language="simple",  # a language the cache has not seen yet
    )
    hits = search_chunks(scope=scope, query_text="zebra", lanes=["keyword"]).hits
    assert [h.content for h in hits] == ["zebra stripes"]


def insert_behind_the_service(scope: SearchScope, language: str) -> None:
    """A chunk written as another process would: no invalidation reaches this process's cache."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO knowledge_chunk (document_id, chunk_index, content, token_count, language, "
            "tenant_id, connector_id, is_deleted, acl_tokens, search_vector, lexeme_count) "
            "SELECT document_id, 99, 'x', 1, %s, tenant_id, connector_id, false, acl_tokens, "
            "to_tsvector('simple', 'x'), 1 FROM knowledge_chunk WHERE tenant_id = %s LIMIT 1",
            [language, scope.tenant_id],
        )


def test_another_processs_write_is_seen_within_the_ttl(scope, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(lookups.LOOKUPS, "ttl", 0.2)
    assert lookups.text_search_languages(scope.tenant_id, None) == ["english"]
    insert_behind_the_service(scope, "simple")
    assert lookups.text_search_languages(scope.tenant_id, None) == ["english"]  # cached
    time.sleep(0.25)
    assert lookups.text_search_languages(scope.tenant_id, None) == ["english", "simple"]


def test_nothing_there_is_never_cached(scope) -> None:  # type: ignore[no-untyped-def]
    assert not lookups.has_embedding_model(scope.tenant_id, "other-model")
    with connection.cursor() as cursor:  # vectors of that model arrive behind the cache's back
        cursor.execute(
            "UPDATE knowledge_chunkembedding SET model = 'other-model' WHERE tenant_id = %s",
            [scope.tenant_id],
        )
    assert lookups.has_embedding_model(scope.tenant_id, "other-model")
    assert lookups.text_search_languages(scope.tenant_id + 1000, None) == []
    assert lookups.populated_dimensions(scope.tenant_id + 1000, None) == []


@pytest.mark.parametrize("reported", [True, False], ids=["lanes-report-parents", "parents-unknown"])
def test_children_expand_to_parents_whether_or_not_the_lanes_report_them(  # type: ignore[no-untyped-def]
    db, settings, reported: bool
) -> None:
    from knowledge.models import Chunk
    from knowledge.pipeline.fusers.base import FusedHit
    from knowledge.pipeline.llm import TokenBudget
    from knowledge.pipeline.registry import reset_pipeline
    from knowledge.pipeline.stages.hits import ParentExpand
    from knowledge.pipeline.stages.types import StageContext
    from knowledge.pipeline.types import Query
    from knowledge.search.stages import to_stage_hit
    from retrieval_backends.types import PARENT_UNKNOWN, LaneHit, SearchScope

    settings.KNOWLEDGE_CHUNKER = "parent-child"
    plugin_options(settings, "chunker", "parent-child", parent_tokens=40)
    reset_pipeline()
    sentences = [f"Sentence {i} talks about topic{i} in detail with several filler words." for i in range(12)]
    document = document_upsert(
        connector=ConnectorFactory.create(), external_id="long", content=" ".join(sentences), is_public=True
    ).document
    children = list(Chunk.objects.filter(document=document, parent_index__isnull=False))
    assert children
    fused = [
        FusedHit(
            chunk_id=c.pk,
            score=1.0,
            ranks={"keyword": 1},
            scores={"keyword": 1.0},
            hit=LaneHit(
                chunk_id=c.pk,
                document_id=c.document_id,
                chunk_index=c.chunk_index,
                score=1.0,
                content=c.content,
                parent_index=c.parent_index if reported else PARENT_UNKNOWN,
            ),
        )
        for c in children
    ]
    scope = SearchScope(tenant_id=document.tenant_id, principal_tokens=frozenset({"public"}))
    context = StageContext(
        query=Query(text="topic"), scope=scope, limit=10, budget=TokenBudget(0), data=SearchData()
    )
    expanded = ParentExpand().run([to_stage_hit(f) for f in fused], context)
    parents = {
        c.chunk_index: c.content for c in Chunk.objects.filter(document=document, parent_index__isnull=True)
    }
    by_child = {c.pk: int(c.parent_index or 0) for c in children}
    assert expanded and all(h.parent_content == parents[by_child[h.chunk_id]] for h in expanded)
    assert len({by_child[h.chunk_id] for h in expanded}) == len(expanded)  # one hit per parent


def test_hits_are_hydrated_once_and_vanished_chunks_dropped(connector, scope) -> None:  # type: ignore[no-untyped-def]
    from knowledge.models import Chunk
    from knowledge.pipeline.fusers.base import FusedHit
    from knowledge.search.hydrate import hydrate_hits
    from retrieval_backends.types import PAGE_UNKNOWN, LaneHit

    chunks = list(Chunk.objects.filter(tenant_id=scope.tenant_id).select_related("document"))
    read = get_backend().keyword_search(scope, "cats dogs ships", ["english"], 10)
    # As hits past the lanes' first 2 x limit (or an external index's) come: without their text.
    bare = [replace(h, content=None, title=None, source_url=None, page=PAGE_UNKNOWN) for h in read]

    def fused(hit: LaneHit) -> FusedHit:
        return FusedHit(chunk_id=hit.chunk_id, score=hit.score, ranks={}, scores={}, hit=hit)

    gone = LaneHit(chunk_id=10**12, document_id=1, chunk_index=0, score=1.0)
    # A verified hit (an external index's) carries its canonical text and page already.
    kept = LaneHit(
        chunk_id=chunks[0].pk, document_id=1, chunk_index=0, score=1.0, content="verified", page=None
    )
    with CaptureQueriesContext(connection) as queries:
        out = hydrate_hits([fused(h) for h in [*bare, gone, kept]])
    assert len(queries) == 1
    by_id = {c.pk: c for c in chunks}
    assert [f.chunk_id for f in out] == [h.chunk_id for h in bare] + [kept.chunk_id]
    for f in out[:-1]:
        chunk = by_id[f.chunk_id]
        assert (f.hit.content, f.hit.title) == (chunk.content, chunk.document.title)
    assert out[-1].hit.content == "verified"
