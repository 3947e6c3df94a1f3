"""Keyword lane latency on SciFact's chunks and its own long queries, against OpenSearch BM25 and bm25s.

Measured twice in one run: right after the bulk load with the table statistics cleared (what a load
leaves until autovacuum gets to the table), and after ANALYZE. Each query goes through every path in
turn, so machine noise hits all alike; ratios are to OpenSearch's BM25 over HTTP on the same chunks
(when the node answers) and bm25s in process is the floor (when installed: `pip install bm25s`).
Usage: python bench/keyword_latency.py [--queries 300] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from anywhere
from bench.common import ROOT, setup_django, summary  # noqa: E402

SCIFACT = ROOT.parent / "shared" / "datasets" / "scifact"
TENANT = "bench-scifact-v1"
INDEX = f"bench-speed-scifact-{os.getpid()}"
CANDIDATE_INDEXES = ("chunk_tenant_lexemes_gin", "chunk_search_vector_gin")
STATISTICS_TABLES = ("knowledge_chunk", "knowledge_keywordterm", "knowledge_keywordstatistics")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--beir", type=Path, default=SCIFACT)
    parser.add_argument("--opensearch", default=os.environ.get("OPENSEARCH_URL", "http://127.0.0.1:9200"))
    parser.add_argument("--database", default="knowledge_bench")
    parser.add_argument("--json", type=Path, default=None)
    return parser.parse_args()


# --- corpus and queries --------------------------------------------------------------------------------
def load_corpus(root: Path) -> int:
    """The SciFact tenant (ingested once with the hashing embedder; the keyword lane ignores vectors)."""
    from django.conf import settings

    from knowledge.connectors.beir import corpus_size, iter_corpus
    from knowledge.models import Connector, Document, Tenant
    from knowledge.pipeline.active import forget_active_embedder
    from knowledge.services.ingestion import documents_ingest

    tenant, _ = Tenant.objects.get_or_create(slug=TENANT, defaults={"name": "SciFact"})
    connector, _ = Connector.objects.get_or_create(tenant=tenant, name="scifact", defaults={"kind": "api"})
    if Document.objects.filter(connector=connector).count() != corpus_size(root):
        settings.KNOWLEDGE_EMBEDDER = "hashing"
        forget_active_embedder()
        documents_ingest(connector=connector, documents=iter_corpus(root), batch_size=64)
    return tenant.pk


def long_queries(root: Path, count: int) -> list[str]:
    """SciFact's own claims of 10 to 25 words, in file order."""
    texts = [json.loads(line)["text"] for line in (root / "queries.jsonl").open()]
    return [t for t in texts if 10 <= len(t.split()) <= 25][:count]


def chunk_texts(tenant_id: int) -> list[tuple[int, str]]:
    from knowledge.models import Chunk

    return list(Chunk.objects.filter(tenant_id=tenant_id).order_by("pk").values_list("pk", "content"))


# --- the paths -------------------------------------------------------------------------------------------
def lane(tenant_id: int, limit: int) -> Callable[[str], Any]:
    from retrieval_backends.registry import get_backend
    from retrieval_backends.types import SearchScope

    backend, scope = get_backend(), SearchScope(tenant_id=tenant_id, principal_tokens=frozenset({"public"}))
    return lambda q: backend.keyword_search(scope, q, ["english"], limit)


def bm25_args(tenant_id: int, query: str, limit: int) -> dict[str, Any]:
    """Ids and scores, as the lane alone returns them (no text)."""
    from knowledge.store.search.bm25 import BM25Params, statement_args

    return statement_args(tenant_id, query, ["english"], limit, BM25Params())


def raw_sql(tenant_id: int, limit: int) -> Callable[[str], Any]:
    """The lane's query with no scope filter and no service layer."""
    from django.db import connection

    from knowledge.store.search.bm25 import BM25_SQL

    sql = BM25_SQL.replace("{where}", "TRUE")

    def run(query: str) -> Any:
        with connection.cursor() as cursor:
            cursor.execute(sql, bm25_args(tenant_id, query, limit))
            return cursor.fetchall()

    return run


def opensearch(url: str, chunks: list[tuple[int, str]], limit: int) -> Callable[[str], Any] | None:
    """The chunks in a fresh index (english analyzer, BM25 k1 1.2, b 0.75); None when no node answers."""
    from opensearchpy import OpenSearch, helpers
    from opensearchpy.exceptions import ConnectionError as NodeDown

    logging.getLogger("opensearch").setLevel(logging.WARNING)
    client = OpenSearch(url, timeout=60)
    try:
        client.info()
    except NodeDown:
        return None
    similarity = {"default": {"type": "BM25", "k1": 1.2, "b": 0.75}}
    client.indices.create(
        index=INDEX,
        body={
            "settings": {"number_of_shards": 1, "number_of_replicas": 0, "index": {"similarity": similarity}},
            "mappings": {"properties": {"content": {"type": "text", "analyzer": "english"}}},
        },
    )
    helpers.bulk(client, ({"_index": INDEX, "_id": pk, "content": text} for pk, text in chunks))
    client.indices.refresh(index=INDEX)
    client.indices.forcemerge(index=INDEX, max_num_segments=1)

    def search(query: str) -> Any:
        body = {"size": limit, "query": {"match": {"content": query}}, "_source": False}
        return client.search(index=INDEX, body=body)

    return search


def drop_index(url: str) -> None:
    from opensearchpy import OpenSearch

    OpenSearch(url, timeout=60).indices.delete(index=INDEX, ignore_unavailable=True)


def bm25s_floor(chunks: list[tuple[int, str]], limit: int) -> Callable[[str], Any] | None:
    try:
        import bm25s
    except ImportError:
        return None
    try:
        import Stemmer

        stemmer = Stemmer.Stemmer("english")
    except ImportError:
        stemmer = None
    retriever = bm25s.BM25(k1=1.2, b=0.75)
    retriever.index(
        bm25s.tokenize([t for _, t in chunks], stopwords="en", stemmer=stemmer, show_progress=False)
    )

    def search(query: str) -> Any:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        return retriever.retrieve(tokens, k=limit, show_progress=False)

    return search


# --- phases ------------------------------------------------------------------------------------------------
def clear_statistics() -> None:
    """What a bulk load leaves behind: no planner statistics (PostgreSQL 18's pg_clear_*_stats)."""
    from django.db import connection

    with connection.cursor() as cursor:
        for table in STATISTICS_TABLES:
            cursor.execute("SELECT pg_clear_relation_stats('public', %s)", [table])
            cursor.execute(
                "SELECT pg_clear_attribute_stats('public', %s, attname, false) FROM pg_attribute "
                "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
                [table, table],
            )


def analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {', '.join(STATISTICS_TABLES)}")


def plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def candidate_scan_loops(tenant_id: int, query: str, limit: int) -> int:
    """How often the plan runs the GIN candidate scan for one query (1 is right; the query's term
    count means the plan flipped)."""
    from django.db import connection

    from knowledge.store.search.bm25 import BM25_SQL

    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + BM25_SQL.replace("{where}", "TRUE"),
            bm25_args(tenant_id, query, limit),
        )
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    loops = [
        n["Actual Loops"] for n in plan_nodes(plan[0]["Plan"]) if n.get("Index Name") in CANDIDATE_INDEXES
    ]
    return max(loops, default=0)


def measure(queries: list[str], warmup: int, paths: dict[str, Callable[[str], Any]]) -> dict[str, Any]:
    """Every query once through every path to warm the caches, then each query through every path in
    turn, the order rotating (the first path of a query would pay for its pages)."""
    for query in queries:
        for fn in paths.values():
            fn(query)
    samples: dict[str, list[float]] = {name: [] for name in paths}
    order = list(paths.items())
    for i, query in enumerate(queries[warmup:]):
        for name, fn in order[i % len(order) :] + order[: i % len(order)]:
            started = time.perf_counter()
            fn(query)
            samples[name].append((time.perf_counter() - started) * 1000)
    figures: dict[str, Any] = {name: summary(ms) for name, ms in samples.items()}
    if "opensearch" in figures:
        for name in ("keyword_lane", "raw_sql"):
            for stat in ("p50_ms", "p95_ms"):
                ratio = figures[name][stat] / figures["opensearch"][stat]
                figures[name][f"{stat[:3]}_over_opensearch"] = round(ratio, 2)
    return figures


def report_lines(figures: dict[str, Any]) -> Iterator[str]:
    yield (
        f"SciFact: {figures['chunks']} chunks, {figures['queries']} queries of 10-25 words, "
        f"top {figures['limit']}"
    )
    for phase in ("fresh_bulk_load", "analyzed"):
        result = figures[phase]
        loops = result["candidate_scan_loops"]
        yield f"\n{phase} (GIN candidate scans for the first query: {loops}; 1 is right, more is one per"
        yield "query term, 0 means no GIN scan: every chunk of the tenant was tested)"
        yield f"{'path':<16}{'p50 ms':>9}{'p95 ms':>9}{'p50/OS':>9}{'p95/OS':>9}"
        for name, row in result["latency"].items():
            ratios = f"{row.get('p50_over_opensearch', ''):>9}{row.get('p95_over_opensearch', ''):>9}"
            yield f"{name:<16}{row['p50_ms']:>9.2f}{row['p95_ms']:>9.2f}{ratios}"


def main() -> None:
    args = parse_args()
    setup_django(args.database)
    tenant_id = load_corpus(args.beir)
    queries = long_queries(args.beir, args.queries + args.warmup)
    chunks = chunk_texts(tenant_id)
    paths: dict[str, Callable[[str], Any]] = {
        "keyword_lane": lane(tenant_id, args.limit),
        "raw_sql": raw_sql(tenant_id, args.limit),
    }
    figures: dict[str, Any] = {
        "chunks": len(chunks),
        "queries": len(queries) - args.warmup,
        "limit": args.limit,
    }
    search = opensearch(args.opensearch, chunks, args.limit)
    try:
        if search is not None:
            paths["opensearch"] = search
        floor = bm25s_floor(chunks, args.limit)
        if floor is not None:
            paths["bm25s"] = floor
        for phase, prepare in (("fresh_bulk_load", clear_statistics), ("analyzed", analyze)):
            prepare()
            loops = candidate_scan_loops(tenant_id, queries[0], args.limit)
            figures[phase] = {"candidate_scan_loops": loops, "latency": measure(queries, args.warmup, paths)}
    finally:
        if search is not None:
            drop_index(args.opensearch)
    print("\n".join(report_lines(figures)))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
