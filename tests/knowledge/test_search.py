"""Hybrid search: embedding, concurrent lanes, RRF, timeouts, dimension checks, canonical verification."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest
from django.test import override_settings

from knowledge.errors import InvalidInput
from knowledge.models import Chunk
from knowledge.pipeline.active import active_embedder
from knowledge.pipeline.fusers.base import FusedHit
from knowledge.pipeline.fusers.rrf import RRFFuser
from knowledge.pipeline.rerankers.mmr import MMRReranker
from knowledge.pipeline.stages.base import HitStage, QueryStage
from knowledge.pipeline.stages.types import PlannedQuery, StageContext, StageHit
from knowledge.search import Stages, search_chunks
from knowledge.services.documents import document_soft_delete, document_upsert
from retrieval_backends.registry import reset_backend
from retrieval_backends.types import PAGE_UNKNOWN, LaneHit, SearchScope
from tests.factories import ConnectorFactory, PrincipalFactory
from tests.knowledge.fake_backends import ForgingBackend
from tests.plugins import plugin_options

BACKENDS = "tests.knowledge.fake_backends"


def backend_settings(path: str):  # type: ignore[no-untyped-def]
    return override_settings(RETRIEVAL_BACKEND=path)


@pytest.fixture
def kb(db):  # type: ignore[no-untyped-def]
    connector = ConnectorFactory.create()
    docs = {
        "cats": "Cats are small carnivorous mammals that purr and hunt mice.",
        "dogs": "Dogs are loyal companions that bark and fetch sticks.",
        "ships": "Container ships carry freight across the ocean.",
    }
    out = {
        key: document_upsert(connector=connector, external_id=key, title=key, content=text, is_public=True)
        for key, text in docs.items()
    }
    scope = SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))
    return connector, {k: r.document for k, r in out.items()}, scope


def test_text_query_is_embedded_and_both_lanes_fused(kb) -> None:  # type: ignore[no-untyped-def]
    _, docs, scope = kb
    result = search_chunks(scope=scope, query_text="cats purr", limit=3)
    top = result.hits[0]
    assert top.document_id == docs["cats"].pk
    assert top.lane_ranks == {"vector": 1, "keyword": 1}
    assert set(top.fusion_terms) == {"vector", "keyword"}
    assert top.rrf_score == pytest.approx(sum(top.fusion_terms.values()))
    assert top.similarity is not None and top.text_rank is not None
    assert result.warnings == []


def test_rrf_k_is_configurable(kb) -> None:  # type: ignore[no-untyped-def]
    _, _, scope = kb
    top = search_chunks(scope=scope, query_text="cats purr", stages=Stages(fuser=RRFFuser(10))).hits[0]
    assert top.rrf_score == pytest.approx(2 / 11)
    assert top.fusion_terms == pytest.approx({"vector": 1 / 11, "keyword": 1 / 11})


class AlsoMice(QueryStage):
    name = "also_mice"

    def run(self, queries: Sequence[PlannedQuery], context: StageContext) -> list[PlannedQuery]:
        return [*queries, PlannedQuery("mice hunting")]


def test_questions_are_embedded_as_queries(kb, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Through embed_queries, which an embedder may serve faster than documents (the local one does)."""
    _, _, scope = kb
    embedder, asked = active_embedder(), []
    original = embedder.embed_queries

    def embed_queries(texts: Sequence[str]) -> list[list[float]]:
        asked.append(list(texts))
        return original(texts)

    monkeypatch.setattr(embedder, "embed_queries", embed_queries)
    assert search_chunks(scope=scope, query_text="cats purr").lanes["vector"] > 0
    assert search_chunks(scope=scope, query_text="cats purr", pipeline=[AlsoMice()]).lanes["vector"] > 0
    assert asked == [["cats purr"], ["cats purr", "mice hunting"]]


class Passthrough(HitStage):
    name = "passthrough"

    def run(self, hits: Sequence[StageHit], context: StageContext) -> list[StageHit]:
        return list(hits)


def recorded_hydrations(monkeypatch) -> list[list[int]]:  # type: ignore[no-untyped-def]
    from knowledge.search import engine as search

    calls: list[list[int]] = []
    original = search.hydrate_hits

    def hydrate(fused):  # type: ignore[no-untyped-def]
        calls.append([f.chunk_id for f in fused])
        return original(fused)

    monkeypatch.setattr(search, "hydrate_hits", hydrate)
    return calls


def many_documents(connector) -> SearchScope:  # type: ignore[no-untyped-def]
    for i in range(8):
        text = f"Cats purr number {i}: notes about cats and their purring, part {i}."
        document_upsert(connector=connector, external_id=f"cat-{i}", content=text, is_public=True)
    return SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))


def test_only_the_answer_is_read_without_hit_stages_and_a_pool_with_them(kb, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    scope = many_documents(kb[0])
    calls = recorded_hydrations(monkeypatch)
    assert len(search_chunks(scope=scope, query_text="cats purr", limit=2).hits) == 2
    assert [len(c) for c in calls] == [2]
    calls.clear()
    result = search_chunks(scope=scope, query_text="cats purr", limit=2, pipeline=[Passthrough()])
    assert len(result.hits) == 2 and [len(c) for c in calls] == [6]  # 3 x the limit, for the stages
    calls.clear()
    result = search_chunks(
        scope=scope, query_text="cats purr", limit=2, stages=Stages(reranker=MMRReranker())
    )
    assert len(result.hits) == 2 and [len(c) for c in calls] == [6]  # a reranker chooses among them


def without_text(fused: FusedHit) -> FusedHit:
    bare = replace(fused.hit, content=None, title=None, source_url=None, page=PAGE_UNKNOWN)
    return replace(fused, hit=bare)


def test_a_chunk_deleted_before_it_is_read_leaves_its_place_to_the_next(kb, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from knowledge.search import engine as search
    from knowledge.search import lanes as retrieval

    scope = many_documents(kb[0])
    expected = [h.chunk_id for h in search_chunks(scope=scope, query_text="cats purr", limit=4).hits]
    calls: list[list[int]] = []
    original = search.hydrate_hits

    def deleting_the_best_first(fused):  # type: ignore[no-untyped-def]
        if not calls:  # as another process's delete, between the lanes and the read
            Chunk.objects.filter(pk=fused[0].chunk_id).delete()
        calls.append([f.chunk_id for f in fused])
        return original(fused)

    monkeypatch.setattr(search, "hydrate_hits", deleting_the_best_first)
    # Hits that come without their text (an external index's, or past the lanes' first 2 x limit).
    monkeypatch.setattr(retrieval, "with_lane_text", lambda fused, _lanes: [without_text(f) for f in fused])
    hits = [h.chunk_id for h in search_chunks(scope=scope, query_text="cats purr", limit=4).hits]
    assert calls[0] == expected and len(calls) == 2 and len(calls[1]) == 1
    assert hits == expected[1:] + calls[1]  # the next best takes the deleted chunk's place


def test_caller_vector_of_unknown_dimension_is_refused_with_the_known_ones(kb) -> None:  # type: ignore[no-untyped-def]
    _, _, scope = kb
    with pytest.raises(InvalidInput, match="has 3 dimensions, but the indexed vectors have 384"):
        search_chunks(scope=scope, query_embedding=[0.1, 0.2, 0.3])


def test_caller_vector_only(kb) -> None:  # type: ignore[no-untyped-def]
    _, docs, scope = kb
    vector = active_embedder().embed("Container ships carry freight across the ocean.")
    result = search_chunks(scope=scope, query_embedding=vector, limit=1)
    assert result.hits[0].document_id == docs["ships"].pk
    assert result.hits[0].text_rank is None


def test_empty_query_is_refused(kb) -> None:  # type: ignore[no-untyped-def]
    _, _, scope = kb
    with pytest.raises(InvalidInput, match="query text, an embedding"):
        search_chunks(scope=scope, query_text="   ")


def test_fail_closed_scope_returns_nothing(kb) -> None:  # type: ignore[no-untyped-def]
    _, _, scope = kb
    assert search_chunks(scope=replace(scope, principal_tokens=frozenset()), query_text="cats").hits == []


@pytest.mark.django_db(transaction=True)
def test_lanes_run_concurrently_outside_transactions() -> None:
    connector = ConnectorFactory.create()
    user = PrincipalFactory.create(tenant=connector.tenant)
    document_upsert(
        connector=connector, external_id="a", content="private ocean freight notes", principals=[user]
    )
    scope = SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({user.acl_token}))
    result = search_chunks(scope=scope, query_text="ocean freight")
    assert [h.lane_ranks for h in result.hits] == [{"vector": 1, "keyword": 1}]


@pytest.mark.django_db(transaction=True)
def test_timed_out_lane_is_dropped_with_a_warning() -> None:
    connector = ConnectorFactory.create()
    document_upsert(connector=connector, external_id="a", content="ocean freight", is_public=True)
    scope = SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))
    with backend_settings(f"{BACKENDS}.SlowKeywordBackend"):
        reset_backend()
        result = search_chunks(scope=scope, query_text="ocean freight")
    assert result.warnings == ["keyword lane timed out and was left out of the results"]
    assert [h.lane_ranks for h in result.hits] == [{"vector": 1}]


def test_other_lane_errors_fail_the_request(kb) -> None:  # type: ignore[no-untyped-def]
    _, _, scope = kb
    with backend_settings(f"{BACKENDS}.BrokenKeywordBackend"), pytest.raises(RuntimeError, match="exploded"):
        reset_backend()
        search_chunks(scope=scope, query_text="cats")


def test_external_hits_are_verified_against_postgres(kb) -> None:  # type: ignore[no-untyped-def]
    connector, docs, scope = kb
    other = ConnectorFactory.create()  # another tenant
    foreign = document_upsert(
        connector=other, external_id="x", content="foreign secret", is_public=True
    ).document
    deleted = document_upsert(
        connector=connector, external_id="gone", content="gone", is_public=True
    ).document
    document_soft_delete(document=deleted)
    private = document_upsert(connector=connector, external_id="p", content="private").document
    cats_chunk = Chunk.objects.get(document=docs["cats"])
    dogs_chunk = Chunk.objects.get(document=docs["dogs"])

    def hit(chunk: Chunk, score: float, **kw: object) -> LaneHit:
        return LaneHit(chunk_id=chunk.pk, document_id=chunk.document_id, chunk_index=0, score=score, **kw)  # type: ignore[arg-type]

    ForgingBackend.forged = [
        LaneHit(chunk_id=10**12, document_id=1, chunk_index=0, score=9.0, content="forged"),
        hit(Chunk.objects.get(document=foreign), 8.0),
        hit(Chunk.objects.get(document=deleted), 7.0),
        hit(Chunk.objects.get(document=private), 6.5),
        hit(dogs_chunk, 6.0, content="STALE", title="stale", source_url="https://evil.example"),
        hit(cats_chunk, 5.0),
    ]
    with backend_settings(f"{BACKENDS}.ForgingBackend"):
        reset_backend()
        result = search_chunks(scope=scope, query_text="anything", limit=10)
    assert [h.chunk_id for h in result.hits] == [dogs_chunk.pk, cats_chunk.pk]
    dogs = result.hits[0]
    assert dogs.content == dogs_chunk.content and dogs.title == "dogs" and dogs.source_url == ""
    assert dogs.similarity == 6.0


def test_verification_keeps_rank_order_and_canonical_acl(kb) -> None:  # type: ignore[no-untyped-def]
    from knowledge.search.verify import verify_hits

    connector, docs, scope = kb
    user = PrincipalFactory.create(tenant=connector.tenant)
    chunks = [Chunk.objects.get(document=docs[k]) for k in ("ships", "cats", "dogs")]
    hits = [LaneHit(chunk_id=c.pk, document_id=c.document_id, chunk_index=0, score=1.0) for c in chunks]
    assert [h.chunk_id for h in verify_hits(scope, hits)] == [c.pk for c in chunks]
    # A stale denormalised token must not widen access: verification reads the document's ACL.
    docs["cats"].is_public = False
    docs["cats"].save()
    user_scope = replace(scope, principal_tokens=frozenset({"public", user.acl_token}))
    assert [h.chunk_id for h in verify_hits(user_scope, hits)] == [chunks[0].pk, chunks[2].pk]


def test_child_hits_carry_their_parents_text_once_per_parent(db, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from knowledge.pipeline.registry import reset_pipeline

    settings.KNOWLEDGE_CHUNKER = "parent-child"
    plugin_options(settings, "chunker", "parent-child", parent_tokens=40)
    reset_pipeline()
    connector = ConnectorFactory.create()
    sentences = [f"Sentence {i} talks about topic{i} in detail with several filler words." for i in range(12)]
    document = document_upsert(
        connector=connector, external_id="long", content=" ".join(sentences), is_public=True
    ).document
    chunks = list(Chunk.objects.filter(document=document).order_by("chunk_index"))
    children = [c for c in chunks if c.parent_index is not None]
    assert children, "the parent-child chunker should have produced children"
    scope = SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))
    calls = recorded_hydrations(monkeypatch)
    result = search_chunks(scope=scope, query_text="topic3 detail", limit=5)
    assert len(calls[0]) > 5  # children: parent_expand may merge some, so it gets the pool
    by_index = {c.chunk_index: c for c in chunks}
    parent_of = {h.chunk_index: by_index[h.chunk_index].parent_index for h in result.hits}
    expanded = [p for p in parent_of.values() if p is not None]
    assert len(expanded) == len(set(expanded))  # one hit per parent
    for hit in result.hits:
        parent = parent_of[hit.chunk_index]
        assert hit.content == by_index[hit.chunk_index].content  # the child keeps its own text and citation
        if parent is not None:
            assert hit.parent_content == by_index[parent].content[: len(hit.parent_content or "")]
    assert "topic3" in result.hits[0].content
