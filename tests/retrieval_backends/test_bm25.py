"""BM25 keyword lane: hand-computed scores, trigger-maintained statistics, tenant isolation, fallback."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from knowledge.models import KeywordStatistics, KeywordTerm
from knowledge.search import search_chunks
from knowledge.services.documents import (
    document_hard_delete,
    document_restore,
    document_soft_delete,
    document_upsert,
)
from knowledge.store.search.bm25 import BM25Params, bm25_search
from retrieval_backends.postgres import PostgresRetrievalBackend
from retrieval_backends.types import SearchScope
from tests.factories import ConnectorFactory

pytestmark = pytest.mark.django_db

TINY = {"d1": "apple banana apple", "d2": "banana cherry", "d3": "cherry date elder fig"}


def ingest(connector, docs: dict[str, str], language: str = "simple") -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {
        key: document_upsert(
            connector=connector, external_id=key, content=text, is_public=True, language=language
        ).document.pk
        for key, text in docs.items()
    }


def scores(
    backend: PostgresRetrievalBackend, tenant_id: int, query: str, language: str = "simple"
) -> dict[int, float]:
    scope = SearchScope(tenant_id=tenant_id, principal_tokens=frozenset({"public"}))
    return {h.document_id: h.score for h in backend.keyword_search(scope, query, [language], 10)}


def snapshot(tenant_id: int) -> tuple[set[tuple[str, int, int]], set[tuple[str, str, int]]]:
    stats = {
        (s.language, s.chunk_count, s.total_length)
        for s in KeywordStatistics.objects.filter(tenant_id=tenant_id, chunk_count__gt=0)
    }
    terms = {(t.language, t.lexeme, t.df) for t in KeywordTerm.objects.filter(tenant_id=tenant_id, df__gt=0)}
    return stats, terms


def test_scores_match_hand_computed_bm25() -> None:
    connector = ConnectorFactory.create()
    ids = ingest(connector, TINY)
    got = scores(PostgresRetrievalBackend(bm25_k1=1.2, bm25_b=0.75), connector.tenant_id, "apple banana")
    # N = 3, avgdl = 3; idf(apple) = ln(1 + 2.5/1.5) = 0.980829, idf(banana) = ln(1 + 1.5/2.5) = 0.470004.
    # d1 (dl 3): apple tf 2 -> 0.980829 * 4.4 / 3.2 = 1.348640; banana tf 1 -> 0.470004 * 2.2 / 2.2.
    # d2 (dl 2): banana tf 1 -> 0.470004 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / 3)) = 0.544215.
    assert got[ids["d1"]] == pytest.approx(1.818644, abs=1e-5)
    assert got[ids["d2"]] == pytest.approx(0.544215, abs=1e-5)
    assert ids["d3"] not in got


def test_candidate_budget_probes_with_the_rarest_terms_only() -> None:
    connector = ConnectorFactory.create()
    ids = ingest(connector, TINY)
    scope = SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))
    tight = BM25Params(candidate_budget=1, per_result=0)
    hits = bm25_search(scope, "apple banana", ["simple"], 10, params=tight, timeout_ms=5000)
    assert [h.document_id for h in hits] == [ids["d1"]]  # d2 matches only the commoner term
    assert hits[0].score == pytest.approx(1.818644, abs=1e-5)  # still scored on every query term
    assert BM25Params(candidate_budget=1).budget_for(10) == 100  # never fewer than 10 postings per result


def test_statistics_follow_insert_replace_soft_delete_restore_and_delete() -> None:
    connector = ConnectorFactory.create()
    tenant_id = connector.tenant_id
    ids = ingest(connector, TINY)
    assert snapshot(tenant_id)[0] == {("simple", 3, 9)}
    document_upsert(
        connector=connector, external_id="d2", content="banana banana kiwi", is_public=True, language="simple"
    )
    stats, terms = snapshot(tenant_id)
    assert stats == {("simple", 3, 10)}
    assert ("simple", "kiwi", 1) in terms and ("simple", "cherry", 1) in terms
    document = document_upsert(
        connector=connector, external_id="d1", content=TINY["d1"], language="simple"
    ).document
    document_soft_delete(document=document)
    assert snapshot(tenant_id)[0] == {("simple", 2, 7)}
    document_restore(document=document)
    assert snapshot(tenant_id)[0] == {("simple", 3, 10)}
    document_hard_delete(document_id=ids["d3"])
    stats, terms = snapshot(tenant_id)
    assert stats == {("simple", 2, 6)}
    assert not any(t[1] == "fig" for t in terms)
    before = snapshot(tenant_id)
    call_command("rebuild_keyword_statistics", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert snapshot(tenant_id) == before


def test_one_tenants_documents_never_change_another_tenants_scores() -> None:
    mine, theirs = ConnectorFactory.create(), ConnectorFactory.create()
    ingest(mine, TINY)
    backend = PostgresRetrievalBackend()
    before = scores(backend, mine.tenant_id, "apple banana")
    ingest(theirs, {f"x{i}": "apple apple apple banana" for i in range(20)})
    assert scores(backend, mine.tenant_id, "apple banana") == before


def test_missing_statistics_fall_back_to_ts_rank_with_a_warning() -> None:
    connector = ConnectorFactory.create()
    ids = ingest(connector, TINY, language="english")
    scope = SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))
    assert search_chunks(scope=scope, query_text="apple", lanes=["keyword"]).warnings == []
    KeywordStatistics.objects.filter(tenant_id=connector.tenant_id).delete()
    result = search_chunks(scope=scope, query_text="apple", lanes=["keyword"])
    assert any("keyword statistics are missing" in w for w in result.warnings)
    assert [h.document_id for h in result.hits] == [ids["d1"]]
    call_command("rebuild_keyword_statistics", tenant=connector.tenant.slug, stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert search_chunks(scope=scope, query_text="apple", lanes=["keyword"]).warnings == []


def test_lexemes_with_quotes_and_backslashes_are_queried_safely() -> None:
    connector = ConnectorFactory.create()
    ingest(connector, {"q": "it's o'clock back\\slash"})
    assert scores(PostgresRetrievalBackend(), connector.tenant_id, "it's back\\slash o'clock")
