"""A PostgreSQL lane asked for `text_hits` reads the text of its first ones in its own statement; the
search asks for 2 x limit, so a search whose answer is among them reads nothing more."""

from __future__ import annotations

import pytest

from knowledge.models import Chunk
from knowledge.pipeline.active import active_embedder
from knowledge.search import search_chunks
from knowledge.services.documents import document_upsert
from retrieval_backends.postgres import PostgresRetrievalBackend
from retrieval_backends.types import PAGE_UNKNOWN, LaneHit, SearchScope
from tests.factories import ConnectorFactory

pytestmark = pytest.mark.django_db
LANE_TEXT_HITS = 20
DOCUMENTS = LANE_TEXT_HITS + 10


@pytest.fixture
def scope() -> SearchScope:
    connector = ConnectorFactory.create()
    for i in range(DOCUMENTS):
        document_upsert(
            connector=connector,
            external_id=f"cat-{i}",
            title=f"Cats {i}",
            source_url=f"https://example.com/cats/{i}",
            content=f"Cats purr, note {i}: " + "cats purr and sleep " * (i % 7 + 1),
            is_public=True,
        )
    Chunk.objects.filter(document__external_id__in=[f"cat-{i}" for i in range(0, DOCUMENTS, 3)]).update(
        page=3
    )
    return SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))


def check_text(hits: list[LaneHit]) -> None:
    assert len(hits) == DOCUMENTS
    assert {h.page for h in hits[:LANE_TEXT_HITS]} == {None, 3}  # a third of the chunks have a page
    stored = {
        c.pk: c for c in Chunk.objects.select_related("document").filter(pk__in=[h.chunk_id for h in hits])
    }
    for hit in hits[:LANE_TEXT_HITS]:
        chunk = stored[hit.chunk_id]
        document = chunk.document
        assert (hit.content, hit.page) == (chunk.content, chunk.page)
        assert (hit.title, hit.source_url, hit.document_external_id) == (
            document.title,
            document.source_url,
            document.external_id,
        )
    for hit in hits[LANE_TEXT_HITS:]:
        assert (hit.content, hit.title, hit.page, hit.document_external_id) == (
            None,
            None,
            PAGE_UNKNOWN,
            None,
        )


def test_the_vector_lane_reads_the_text_of_its_first_hits(scope: SearchScope) -> None:
    embedder = active_embedder()
    query = embedder.embed_query("cats purr")
    backend = PostgresRetrievalBackend()
    hits = backend.vector_search(
        scope, query, embedder.dimension, DOCUMENTS, model=embedder.name, text_hits=LANE_TEXT_HITS
    )
    check_text(hits)
    assert all(
        h.content is None
        for h in backend.vector_search(scope, query, embedder.dimension, 5, model=embedder.name)
    )


def test_the_keyword_lane_reads_the_text_of_its_first_hits(scope: SearchScope) -> None:
    backend = PostgresRetrievalBackend()
    check_text(backend.keyword_search(scope, "cats purr", ["english"], DOCUMENTS, text_hits=LANE_TEXT_HITS))
    assert all(h.content is None for h in backend.keyword_search(scope, "cats purr", ["english"], 5))


def test_a_search_answered_from_the_lanes_first_hits_takes_one_statement_a_lane(
    scope: SearchScope, django_assert_num_queries: pytest.FixtureRequest
) -> None:
    search_chunks(scope=scope, query_text="cats purr")  # the first search fills the look-up cache
    with django_assert_num_queries(2):  # type: ignore[operator]
        result = search_chunks(scope=scope, query_text="cats purr", limit=10)
    assert len(result.hits) == 10 and all("Cats purr" in h.content for h in result.hits)
    assert all(h.title.startswith("Cats ") and h.document_external_id for h in result.hits)


def test_a_fused_hit_takes_the_text_another_lane_read() -> None:
    from knowledge.pipeline.fusers.base import FusedHit
    from knowledge.search.hydrate import with_lane_text

    bare = LaneHit(chunk_id=1, document_id=9, chunk_index=0, score=0.5)
    read = LaneHit(
        chunk_id=1,
        document_id=9,
        chunk_index=0,
        score=7.0,
        content="text",
        title="T",
        page=2,
        source_url="u",
        document_external_id="doc-9",
    )
    alone = LaneHit(chunk_id=2, document_id=9, chunk_index=1, score=0.4)
    fused = [FusedHit(h.chunk_id, 1.0, {"vector": 1}, {"vector": h.score}, h) for h in (bare, alone)]
    first, second = with_lane_text(fused, {"vector": [bare, alone], "keyword": [read]})
    assert (first.hit.content, first.hit.title, first.hit.page, first.hit.document_external_id) == (
        "text",
        "T",
        2,
        "doc-9",
    )
    assert first.hit.score == 0.5 and first.scores == {"vector": 0.5}  # the fused hit's own lane stays
    assert second == fused[1]
