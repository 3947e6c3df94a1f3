"""The keyword lane's plan does not depend on table statistics: its candidate scan runs once per query.

Before, a bulk load without ANALYZE made the planner guess one query term and re-run the candidate
Bitmap Heap Scan once per term (loops = terms). The plan is checked with EXPLAIN ANALYZE on a freshly
loaded table with its statistics cleared, and again after ANALYZE. The exact scoring after the bounds
reads chunks by primary key only (never a scan), and fewer of them than there are candidates; so does
the read of the first hits' text.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from knowledge.models import Tenant
from knowledge.store import prepared
from knowledge.store.chunks import insert_chunks
from knowledge.store.search.bm25 import BM25_SQL, BM25Params, _named_filter, statement_args
from retrieval_backends.postgres import PostgresRetrievalBackend
from retrieval_backends.types import ChunkInput, SearchScope
from tests.factories import DocumentFactory

pytestmark = pytest.mark.django_db

WORDS = [f"w{i:03d}" for i in range(300)]
TEXT_HITS = 20  # what a search of the top 10 asks for
QUERY = " ".join(WORDS[i] for i in (0, 3, 7, 12, 20, 33, 50, 80, 120, 190, 250, 299))


def bulk_load(tenant_id: int, chunks: int = 1500) -> None:
    """Chunks of Zipf-ish words (so query terms have very different document frequencies)."""
    document = DocumentFactory.create(connector__tenant=Tenant.objects.get(pk=tenant_id), is_public=True)
    rng = random.Random(7)
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]
    insert_chunks(
        [
            ChunkInput(
                document_id=document.pk,
                chunk_index=i,
                content=" ".join(rng.choices(WORDS, weights, k=40)),
                language="simple",
                tenant_id=tenant_id,
                connector_id=document.connector_id,
                acl_tokens=("public",),
            )
            for i in range(chunks)
        ]
    )


def clear_statistics() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_proc WHERE proname = 'pg_clear_relation_stats'")
        if cursor.fetchone() is None:  # before PostgreSQL 18: a table that was never analyzed
            return
        for table in ("knowledge_chunk", "knowledge_keywordterm", "knowledge_keywordstatistics"):
            cursor.execute("SELECT pg_clear_relation_stats('public', %s)", [table])
            cursor.execute(
                "SELECT pg_clear_attribute_stats('public', %s, attname, false) FROM pg_attribute "
                "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
                [table, table],
            )


def nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def explained(sql: str, args: dict[str, Any], generic: bool) -> Any:
    """EXPLAIN ANALYZE of the statement as written, or of the generic plan the lane executes."""
    with connection.cursor() as cursor:
        if not generic:
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, args)
            return cursor.fetchone()[0]
        known = prepared.known_statements(cursor, connection.connection)  # (earlier tests' too)
        *prepare, execute = prepared.execute_parts(sql, args, known)
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        for statement in prepare:
            cursor.execute(statement, args)
        prepared.remember(connection.connection, [sql])
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + execute, args)
        plan = cursor.fetchone()[0]
        return plan


def chunk_reads(tenant_id: int, generic: bool = False) -> list[dict[str, Any]]:
    """The plan nodes that read the chunk table or any of its indexes, for a top-50 query."""
    scope = SearchScope(tenant_id=tenant_id, principal_tokens=frozenset({"public"}))
    where, filter_params = _named_filter(scope)
    args = statement_args(tenant_id, QUERY, ["simple"], 50, BM25Params(), text_hits=TEXT_HITS) | filter_params
    plan = explained(BM25_SQL.replace("{where}", where), args, generic)
    plan = json.loads(plan) if isinstance(plan, str) else plan
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'knowledge_chunk'")
        indexes = {row[0] for row in cursor.fetchall()}
    return [
        node
        for node in nodes(plan[0]["Plan"])
        if node.get("Index Name") in indexes or node.get("Relation Name") == "knowledge_chunk"
    ]


def candidate_scans(tenant_id: int, generic: bool = False) -> list[dict[str, Any]]:
    """The reads that look for chunks by their lexemes (index, heap or a scan of the table), not the
    exact step's look-ups by key, whatever node types the planner chose for either."""
    return [node for node in chunk_reads(tenant_id, generic) if "search_vector" in _conditions(node)]


def _conditions(node: dict[str, Any]) -> str:
    return " ".join(node.get(key, "") for key in ("Index Cond", "Recheck Cond", "Filter"))


def loaded_tenant(analyzed: bool) -> int:
    """A tenant right after a bulk load with the statistics cleared, or after ANALYZE too."""
    tenant_id = DocumentFactory.create().tenant_id
    bulk_load(tenant_id)
    clear_statistics()
    if analyzed:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE knowledge_chunk, knowledge_keywordterm, knowledge_keywordstatistics")
    return tenant_id


@pytest.mark.parametrize("generic", [False, True], ids=["custom-plan", "generic-plan"])
@pytest.mark.parametrize("analyzed", [False, True], ids=["fresh-bulk-load", "after-analyze"])
def test_the_candidate_scan_runs_once_whatever_the_statistics(analyzed: bool, generic: bool) -> None:
    tenant_id = loaded_tenant(analyzed)
    scans = candidate_scans(tenant_id, generic)
    assert scans, "the candidate scan was not found in the plan"
    assert sum(node["Actual Rows"] for node in scans) > 100  # many candidates: a re-scan would show
    assert [node["Actual Loops"] for node in scans] == [1] * len(scans)


@pytest.mark.parametrize("generic", [False, True], ids=["custom-plan", "generic-plan"])
@pytest.mark.parametrize("analyzed", [False, True], ids=["fresh-bulk-load", "after-analyze"])
def test_only_chunks_that_can_reach_the_answer_are_scored_exactly(analyzed: bool, generic: bool) -> None:
    tenant_id = loaded_tenant(analyzed)
    reads = chunk_reads(tenant_id, generic)
    [candidates] = [n["Actual Rows"] for n in reads if n.get("Index Name") == "chunk_tenant_lexemes_gin"]
    by_key = [node for node in reads if node.get("Index Name") == "knowledge_chunk_pkey"]
    # Every other read of the table goes through the primary key (an index or a bitmap scan of it).
    assert {node.get("Index Name") for node in reads if "Index" in node["Node Type"]} == {
        "chunk_tenant_lexemes_gin",
        "knowledge_chunk_pkey",
    }
    assert all(node["Node Type"] in {"Index Scan", "Bitmap Heap Scan", "Bitmap Index Scan"} for node in reads)
    # The exact step, and the text of the first hits.
    exact, text = sorted(by_key, key=lambda node: -node["Actual Loops"])
    assert 50 <= exact["Actual Loops"] < candidates / 2
    assert text["Actual Loops"] == TEXT_HITS


def test_a_generic_plan_made_while_the_table_was_small_still_reads_chunks_by_key() -> None:
    """The lane's plan is made once per connection: made on a nearly empty table, the exact step must
    not have become a scan of the table (then run once per rescored chunk at any later size)."""
    tenant_id = DocumentFactory.create().tenant_id
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
    prepared.forget(connection.connection)
    bulk_load(tenant_id, chunks=3)
    scope = SearchScope(tenant_id=tenant_id, principal_tokens=frozenset({"public"}))
    assert PostgresRetrievalBackend().keyword_search(scope, QUERY, ["simple"], 50)  # plans it now
    bulk_load(tenant_id)
    reads = chunk_reads(tenant_id, generic=True)
    assert "Seq Scan" not in {node["Node Type"] for node in reads}
    assert "knowledge_chunk_pkey" in {node.get("Index Name") for node in reads}
