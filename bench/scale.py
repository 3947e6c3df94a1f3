"""Many tenants of Zipf-like sizes in one database: per size class and visibility, lane and hybrid latency,
filtered recall@10 against exact search, the same tenant alone in a database of its own, load and index
build times, and bytes per chunk, on PostgreSQL and OpenSearch over the same corpus in one run.

The corpus is synthetic (bench/search_latency.py's generator: Zipf words, low-rank vectors, visibility
groups v100/v10/v1 granted to 100/10/1 % of documents) and COPYed behind the write service, as that
benchmark does; each tenant draws from its own seed, so a tenant rebuilt alone is the same tenant.
Usage: python bench/scale.py [--chunks 1000000] [--tenants 200] [--backends postgres opensearch]
The issue's goal run is the default; `--chunks 3000 --tenants 6 --smallest 100` is the smoke size.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from anywhere
from bench import scale_corpus as corpus  # noqa: E402
from bench.common import setup_django, summary  # noqa: E402
from bench.search_latency import (  # noqa: E402
    LIMIT,
    drop_secondary_indexes,
    mean_recall,
    run_interleaved,
    scope_for,
    sql_ids,
    vector_text,
)

SERVING_URL = os.environ.get("DATABASE_URL", "")  # this checkout's, before setup_django points it here
CLASSES = (("100k+", 100_000), ("10k-100k", 10_000), ("1k-10k", 1_000), ("<1k", 0))
TABLES = ("knowledge_document", "knowledge_chunk", "knowledge_chunkembedding")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--tenants", type=int, default=200)
    parser.add_argument("--largest", type=float, default=0.3, help="the biggest tenant's share (0.3)")
    parser.add_argument("--smallest", type=int, default=500, help="chunks of the smallest tenants (500)")
    parser.add_argument("--queries", type=int, default=50, help="per tenant and visibility")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument(
        "--backends", nargs="+", choices=["postgres", "opensearch"], default=["postgres", "opensearch"]
    )
    parser.add_argument("--no-alone", action="store_true", help="skip the tenant-alone baselines")
    parser.add_argument(
        "--reuse", action="store_true", help="measure a corpus an earlier run loaded (same sizes) again"
    )
    parser.add_argument(
        "--alone-classes", type=int, default=None, help="alone baselines for the N biggest classes only"
    )
    parser.add_argument("--database", default="knowledge_scale")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--measure", default=None, help=argparse.SUPPRESS)  # internal: one backend's child
    return parser.parse_args()


# --- sizes and loading -------------------------------------------------------------------------------------
def tenant_sizes(total: int, tenants: int, largest: float, smallest: int) -> list[int]:
    """Zipf-like sizes, biggest first: the exponent is chosen so the first tenant holds `largest` of the
    total; none is below `smallest` (so the sum can exceed `total` a little)."""

    def first_share(s: float) -> float:
        return 1.0 / sum((i + 1) ** -s for i in range(tenants))

    low, high = 0.0, 5.0
    for _ in range(60):  # the first tenant's share grows with the exponent
        middle = (low + high) / 2
        low, high = (middle, high) if first_share(middle) < largest else (low, middle)
    weights = [(i + 1) ** -low for i in range(tenants)]
    scale = total / sum(weights)
    return [max(smallest, round(w * scale)) for w in weights]


def size_class(chunks: int) -> str:
    return next(name for name, floor in CLASSES if chunks >= floor)


def load(sizes: list[int], seed: int, only: int | None = None) -> dict[str, Any]:
    """Wipe the database's tenants and COPY the corpus (`only`: that one tenant), then build what the
    write path keeps: keyword statistics and weights, the secondary indexes, each big tenant's own
    vector index. Times per phase, and tenant ids."""
    from django.db import connection, transaction
    from pgvector.psycopg import register_vector

    started = time.perf_counter()
    shared = corpus.Shared.build(seed)  # one vocabulary and projection for every tenant
    tenant_ids: dict[int, int] = {}
    times: dict[str, float] = {}
    connection.ensure_connection()
    register_vector(connection.connection)  # binary COPY of the vectors (cursors copy the adapters)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("TRUNCATE knowledge_tenant CASCADE")
        _default_tenant()
        index_defs = drop_secondary_indexes(cursor)
        cursor.execute(
            "CREATE TEMP TABLE bench_chunk (id bigint, document_id bigint, chunk_index int, content text, "
            "acl varchar[]) ON COMMIT DROP"
        )
        first_doc, terms = 0, corpus.TermsAnalyzed()
        with tqdm(total=sum(sizes) if only is None else sizes[only], unit="chunk", desc="load") as bar:
            for index, size in enumerate(sizes):
                if only is None or only == index:
                    tenant_ids[index] = _load_tenant(cursor, index, size, first_doc, shared, seed, bar, terms)
                first_doc += math.ceil(size / corpus.CHUNKS_PER_DOC)
        times["copy_seconds"] = time.perf_counter() - started
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # CREATE INDEX refuses pending FK checks
        for sql in index_defs:
            cursor.execute(sql)
        for table in TABLES:
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), max(id)) FROM {table}")
        times["index_seconds"] = time.perf_counter() - started - sum(times.values())
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM (ANALYZE) {', '.join(TABLES)}")
    times["vector_index_seconds"] = _vector_indexes()
    times["total_seconds"] = time.perf_counter() - started
    return {"tenant_ids": tenant_ids, **{k: round(v, 1) for k, v in times.items()}}


def reused(sizes: list[int]) -> dict[str, Any] | None:
    """The tenant ids of a complete earlier load of these sizes (its graphs built if missing), or None."""
    from knowledge.models import Chunk, Tenant

    ids = dict(Tenant.objects.filter(slug__startswith="scale-").values_list("slug", "pk"))
    if len(ids) != len(sizes) or Chunk.objects.count() != sum(sizes):
        return None
    seconds = _vector_indexes()
    tenant_ids = {index: ids[f"scale-{index}"] for index in range(len(sizes))}
    return {"tenant_ids": tenant_ids, "copy_seconds": 0.0, "index_seconds": 0.0,
            "vector_index_seconds": round(seconds, 1), "total_seconds": 0.0, "reused": True}  # fmt: skip


def _default_tenant() -> None:
    from knowledge.models import Tenant

    Tenant.objects.create(slug=Tenant.DEFAULT_SLUG, name="Primary")


def _load_tenant(
    cursor: Any, index: int, size: int, first_doc: int, shared: corpus.Shared, seed: int, bar: Any,
    terms: corpus.TermsAnalyzed,
) -> int:  # fmt: skip
    from knowledge.models import Connector, Principal, Tenant

    tenant = Tenant.objects.create(slug=f"scale-{index}", name=f"Scale {index} ({size} chunks)")
    connector = Connector.objects.create(tenant=tenant, name="bench", kind="api", config={})
    names = corpus.principal_names()
    Principal.objects.bulk_create(
        Principal(tenant=tenant, kind=Principal.Kind.USER if user else Principal.Kind.GROUP, external_id=e)
        for _, e, user in names
    )
    ids = dict(Principal.objects.filter(tenant=tenant).values_list("external_id", "pk"))
    principals = {name: ids[external] for name, external, _ in names}
    dimensions = corpus.dimension_of(index)
    for batch in corpus.batches(shared, seed * 100_003 + index, size, first_doc, dimensions):
        corpus.copy_batch(cursor.cursor, (tenant.pk, connector.pk), batch, principals, dimensions)
        bar.update(len(batch.chunk_ids))
    corpus.insert_chunks(cursor, tenant.pk, connector.pk, terms)
    return int(tenant.pk)


def _vector_indexes() -> float:
    """Seconds to build the per-tenant vector indexes, through the bulk worker's maintenance service."""
    from django.conf import settings

    from knowledge.services.vector_indexes import vector_indexes_maintain

    options = settings.RETRIEVAL_BACKENDS["postgres"]["OPTIONS"]
    with tqdm(desc="vector indexes", unit="vector") as bar:
        report = vector_indexes_maintain(
            min_vectors=options["tenant_index_min_vectors"], on_build=lambda _, rows: bar.update(rows)
        )
    if report.failed:
        raise SystemExit(f"vector index builds failed: {report.failed}")
    return report.seconds


def disk_bytes() -> dict[str, int]:
    """Each table's heap, TOAST and indexes, in bytes."""
    from django.db import connection

    from knowledge.store.vector_indexes import PREFIX as TENANT_INDEX_PREFIX

    out: dict[str, int] = {}
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(
                "SELECT pg_relation_size(c.oid), coalesce(pg_total_relation_size(c.reltoastrelid), 0) "
                "FROM pg_class c WHERE c.relname = %s",
                [table],
            )
            heap, toast = cursor.fetchone()
            out[f"{table}.heap"], out[f"{table}.toast"] = heap, toast
            cursor.execute(
                "SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) FROM pg_index "
                "WHERE indrelid = %s::regclass",
                [table],
            )
            for name, size in cursor.fetchall():
                if name.startswith(TENANT_INDEX_PREFIX):  # one per big tenant: reported together
                    name = f"{TENANT_INDEX_PREFIX}* (per tenant)"
                out[f"index.{name}"] = out.get(f"index.{name}", 0) + size
    return out


# --- measuring ---------------------------------------------------------------------------------------------
EXACT_VECTOR = (
    "SELECT chunk_id FROM knowledge_chunkembedding WHERE tenant_id = %s AND model = %s AND NOT is_deleted "
    "AND acl_tokens && %s::varchar[] ORDER BY embedding <=> %s::vector, chunk_id LIMIT %s"
)


def sql_rows(statement: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(statement, params or [])
        return list(cursor.fetchall())


def sql_run(statement: str, params: list[Any] | None = None) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(statement, params or [])


def exact_truth(tenant_id: int, model: str, scope: Any, vector: list[float]) -> list[int]:
    """The scope's exact top 10 among the tenant's vectors of `model` (full precision)."""
    tokens = sorted(scope.principal_tokens)
    return sql_ids(EXACT_VECTOR, [tenant_id, model, tokens, vector_text(vector), LIMIT])


def tenant_space(tenant_id: int) -> tuple[int, str]:
    """The tenant's (dimensions, model)."""
    from knowledge.models import ChunkEmbedding

    row = ChunkEmbedding.objects.filter(tenant_id=tenant_id).values_list("dimensions", "model").first()
    assert row is not None, f"tenant {tenant_id} has no vectors"
    return int(row[0]), str(row[1])


def tenant_queries(tenant_id: int, count: int, seed: int) -> list[tuple[list[float], str]]:
    """Vectors near random vectors of the tenant, and 3-8 Zipf words."""
    import numpy as np
    from django.db import connection

    rng = np.random.default_rng([seed, tenant_id])
    shared = corpus.Shared.build(seed)
    dimensions, model = tenant_space(tenant_id)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT embedding::text FROM knowledge_chunkembedding WHERE tenant_id = %s AND model = %s "
            "ORDER BY random() LIMIT %s",
            [tenant_id, model, count],
        )
        sources = np.array([json.loads(row[0]) for row in cursor.fetchall()])
    noisy = sources + rng.normal(scale=0.3 / math.sqrt(dimensions), size=sources.shape)
    return [(vector.tolist(), shared.query_text(rng)) for vector in noisy]


def paths(backend: Any, scope: Any, space: tuple[int, str]) -> dict[str, Callable[[Any], Any]]:
    from knowledge.search import search_chunks

    dimensions, model = space

    def hybrid(q: Any) -> Any:
        return search_chunks(scope=scope, query_text=q[1], query_embedding=q[0], limit=LIMIT)

    def vector(q: Any) -> list[int]:
        return [h.chunk_id for h in backend.vector_search(scope, q[0], dimensions, LIMIT, model=model)]

    def keyword(q: Any) -> Any:
        return backend.keyword_search(scope, q[1], ["english"], LIMIT)

    return {"hybrid": hybrid, "vector": vector, "keyword": keyword}


def visible_recall(found: list[list[int]], truth: list[list[int]]) -> float | None:
    """Mean recall@10 over the queries with something visible (None: nothing visible at all)."""
    pairs = [(f, t) for f, t in zip(found, truth, strict=True) if t]
    return mean_recall([f for f, _ in pairs], [t for _, t in pairs]) if pairs else None


def measure_tenant(tenant_id: int, queries: int, warmup: int, seed: int) -> dict[str, Any]:
    """Per visibility: hybrid, vector-lane and keyword-lane p50/p95, and the vector lane's recall@10."""
    from retrieval_backends.registry import get_backend

    backend = get_backend()
    space = tenant_space(tenant_id)
    asked = tenant_queries(tenant_id, queries + warmup, seed)
    out: dict[str, Any] = {"dimensions": space[0]}
    for level, group in corpus.VISIBILITY.items():
        scope = scope_for(tenant_id, group)
        runs = run_interleaved(asked, warmup, paths(backend, scope, space))
        truth = [exact_truth(tenant_id, space[1], scope, q[0]) for q in asked]
        out[level] = {name: summary([t for t, _ in samples]) for name, samples in runs.items()}
        out[level]["recall_at_10"] = visible_recall([ids for _, ids in runs["vector"]], truth)
    return out


def child_env(**extra: str) -> dict[str, str]:
    """A child's environment: this checkout's DATABASE_URL again (the child picks its database)."""
    return {**os.environ, "DATABASE_URL": SERVING_URL, **extra}


def measure(
    args: argparse.Namespace, backend: str, tenants: dict[str, int], prefix: str = ""
) -> dict[str, Any]:
    """One backend's figures for the chosen tenants, in a child process configured for it."""
    index_prefix = f"{args.database}-{prefix or 'shared'}".replace("_", "-")
    env = child_env(KNOWLEDGE_RETRIEVAL_BACKEND=backend, OPENSEARCH_INDEX_PREFIX=index_prefix)
    command = [sys.executable, __file__, "--measure", json.dumps({"backend": backend, "tenants": tenants}),
               "--database", args.database, "--queries", str(args.queries), "--warmup", str(args.warmup),
               "--seed", str(args.seed)]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"measuring {backend} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure_child(args: argparse.Namespace) -> None:
    spec = json.loads(args.measure)
    setup_django(args.database)
    pushed = None
    if spec["backend"] == "opensearch":
        from bench.opensearch_paths import push_corpus, wipe_indices

        wipe_indices()  # an earlier run's entries under this prefix would take k slots
        pushed = push_corpus()
    else:
        postgres_prewarm(list(spec["tenants"].values()))
    figures = {
        label: measure_tenant(tenant_id, args.queries, args.warmup, args.seed)
        for label, tenant_id in spec["tenants"].items()
    }
    memory = opensearch_memory() if spec["backend"] == "opensearch" else postgres_memory()
    print(json.dumps({"pushed": pushed, "tenants": figures, "memory": memory}))


def postgres_prewarm(tenant_ids: list[int]) -> None:
    """Read what the measured tenants' searches touch into shared buffers (a serving database is warm;
    without this the first cells would measure the disk): their graphs, then vector and chunk rows."""
    from django.db import connection

    from knowledge.store.vector_indexes import PREFIX as TENANT_INDEX_PREFIX

    graphs = [f"{TENANT_INDEX_PREFIX}{tenant_id}\\_%" for tenant_id in tenant_ids]
    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        cursor.execute(
            "SELECT sum(pg_prewarm(c.oid)) FROM pg_class c WHERE c.relkind = 'i' AND c.relname LIKE ANY(%s)",
            [graphs],
        )
        for relation in ("chunk_tenant_lexemes_gin", "knowledge_chunkembedding", "knowledge_chunk"):
            cursor.execute("SELECT pg_prewarm(%s)", [relation])


def postgres_memory() -> dict[str, int]:
    """Bytes of each search relation in shared buffers after the measured searches (what they kept
    hot; the OS page cache holds more), and the size of the vector graphs a search walks."""
    from django.db import connection

    from knowledge.store.vector_indexes import PREFIX as TENANT_INDEX_PREFIX

    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_buffercache")
        cursor.execute(
            "SELECT CASE WHEN c.relname LIKE %s THEN 'tenant hnsw indexes' ELSE c.relname END, "
            "count(*) * current_setting('block_size')::int FROM pg_buffercache b "
            "JOIN pg_class c ON b.relfilenode = pg_relation_filenode(c.oid) "
            "WHERE b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "GROUP BY 1 ORDER BY 2 DESC LIMIT 12",
            [TENANT_INDEX_PREFIX + "%"],
        )
        return {f"shared_buffers.{name}": int(size) for name, size in cursor.fetchall()}


def opensearch_memory() -> dict[str, int]:
    """The node's JVM heap in use, and the vector indices' size (lucene reads vectors and graphs
    through the OS page cache, off the heap)."""
    from retrieval_backends.registry import get_backend

    client = get_backend().client  # type: ignore[attr-defined]
    stats = client.nodes.stats(metric="jvm")
    heap = sum(node["jvm"]["mem"]["heap_used_in_bytes"] for node in stats["nodes"].values())
    indices = client.indices.stats(index=get_backend().names.all_aliases, metric="store")  # type: ignore[attr-defined]
    vectors = sum(
        v["total"]["store"]["size_in_bytes"] for k, v in indices["indices"].items() if "-vectors-" in k
    )
    chunks = sum(
        v["total"]["store"]["size_in_bytes"] for k, v in indices["indices"].items() if "-chunks" in k
    )
    return {"jvm_heap_used": int(heap), "vector_indices": int(vectors), "chunk_index": int(chunks)}


def representatives_384() -> dict[str, tuple[int, int]]:
    """Per size class, the biggest 384-d tenant: class -> (tenant id, vectors)."""
    from django.db.models import Count

    from knowledge.models import ChunkEmbedding

    rows = (
        ChunkEmbedding.objects.filter(dimensions=384, model__endswith="-384")
        .values("tenant_id")
        .annotate(n=Count("id"))
        .order_by("-n")
    )
    chosen: dict[str, tuple[int, int]] = {}
    for row in rows:
        chosen.setdefault(size_class(row["n"]), (row["tenant_id"], row["n"]))
    return chosen


def representatives(sizes: list[int]) -> dict[str, int]:
    """The biggest tenant of each size class that has one: class -> tenant index."""
    chosen: dict[str, int] = {}
    for index, size in enumerate(sizes):
        chosen.setdefault(size_class(size), index)
    return chosen


def main() -> None:
    args = parse_args()
    if args.measure:
        measure_child(args)
        return
    sizes = tenant_sizes(args.chunks, args.tenants, args.largest, args.smallest)
    chosen = representatives(sizes)
    setup_django(args.database)
    loaded = reused(sizes) if args.reuse else None
    loaded = loaded or load(sizes, args.seed)
    ids = loaded.pop("tenant_ids")
    chunks = sum(sizes)
    bytes_ = disk_bytes()
    figures: dict[str, Any] = {
        "chunks": chunks,
        "tenants": len(sizes),
        "sizes": {name: sizes[i] for name, i in chosen.items()},
        "load": loaded,
        "bytes_per_chunk": {name: round(b / chunks, 1) for name, b in bytes_.items()},
        "shared": {},
        "alone": {},
    }
    targets = {name: ids[i] for name, i in chosen.items()}
    for backend in args.backends:
        figures["shared"][backend] = measure(args, backend, targets)
    if not args.no_alone:
        alone_db = f"{args.database}_alone"
        for name, index in list(chosen.items())[: args.alone_classes]:  # same seed: the same tenant
            figures["alone"][name] = _alone(args, alone_db, sizes, index)
    print("\n".join(report_lines(figures)))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


def report_lines(figures: dict[str, Any]) -> list[str]:
    """A table per backend: size class, visibility, p50/p95 of each path (shared, then alone), recall."""
    load = figures["load"]
    per_chunk = figures["bytes_per_chunk"]
    lines = [
        f"{figures['chunks']} chunks in {figures['tenants']} tenants; load {load['copy_seconds']} s, "
        f"vector indexes {load['vector_index_seconds']} s, "
        f"indexes {load['index_seconds']} s; {round(sum(per_chunk.values()))} bytes per chunk on disk "
        f"(vectors {round(per_chunk['knowledge_chunkembedding.heap'])}, "
        f"HNSW {round(sum(v for k, v in per_chunk.items() if 'hnsw' in k))})"
    ]
    for backend, shared in figures["shared"].items():
        lines.append(
            f"\n{backend} (p50/p95 ms; in brackets: p95 of the same tenant alone in its own database)"
        )
        if shared.get("pushed"):
            pushed = shared["pushed"]
            lines.append(f"pushed {pushed['documents']} documents in {pushed['seconds']} s")
        memory = ", ".join(f"{k} {v / 2**20:.0f} MB" for k, v in shared.get("memory", {}).items())
        lines.append(f"memory: {memory}")
        lines.append(
            "class      size     dims vis   hybrid            vector            keyword           recall@10"
        )
        for label, levels in shared["tenants"].items():
            alone = figures["alone"].get(label, {}).get(backend, {}).get("tenants", {}).get("alone", {})
            for level, row in levels.items():
                if level == "dimensions":
                    continue
                cells = []
                for path in ("hybrid", "vector", "keyword"):
                    cell = f"{row[path]['p50_ms']:.1f}/{row[path]['p95_ms']:.1f}"
                    if level in alone:
                        cell += f" ({alone[level][path]['p95_ms']:.1f})"
                    cells.append(cell.ljust(17))
                recall = "n/a" if row["recall_at_10"] is None else f"{row['recall_at_10']:.3f}"
                size = figures["sizes"][label]
                dims = levels["dimensions"]
                lines.append(f"{label:<10} {size:<8} {dims:<4} {level:<5} {' '.join(cells)} {recall}")
    return lines


def _alone(args: argparse.Namespace, database: str, sizes: list[int], index: int) -> dict[str, Any]:
    """Load tenant `index` alone into `database` (a child process: Django is set up once per database)."""
    root = str(Path(__file__).resolve().parent.parent)
    code = (
        f"import sys, json; sys.path.insert(0, {root!r}); from bench import scale; "
        f"from bench.common import setup_django; setup_django({database!r}); "
        f"print(json.dumps(scale.load({sizes!r}, {args.seed}, only={index})['tenant_ids']))"
    )
    command = [sys.executable, "-c", code]
    done = subprocess.run(command, env=child_env(), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"loading tenant {index} alone failed:\n{done.stderr[-3000:]}")
    tenant_id = json.loads(done.stdout.strip().splitlines()[-1])[str(index)]
    alone = argparse.Namespace(**{**vars(args), "database": database})
    return {backend: measure(alone, backend, {"alone": tenant_id}, f"t{index}") for backend in args.backends}


if __name__ == "__main__":
    main()
