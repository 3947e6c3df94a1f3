"""Search latency and filtered-vector recall on a synthetic corpus, in a dedicated database."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import operator
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from anywhere
from bench.common import setup_django, summary  # noqa: E402

DIM, MODEL, CHUNKS_PER_DOC, LIMIT = 384, "bench-random-384", 5, 10
VOCAB_SIZE, ZIPF_S, STOPWORD_RANKS = 20_000, 1.1, 100
# Isotropic random 384-d vectors have no neighbourhood structure (HNSW recall@10 ~0.2 on them); real
# embeddings have a low intrinsic dimension, so vectors are a LATENT_DIMS-d Gaussian projected to 384-d
# plus a little isotropic noise, and a document's chunks scatter around the document's latent point.
LATENT_DIMS, CHUNK_SPREAD, NOISE = 12, 0.5, 0.15
CORPUS_VERSION = 3  # part of the tenant slug that marks a complete corpus; bump when generation changes
# Each level is a real group principal: documents grant it, so the index sync pushes the same ACL.
VISIBILITY = {"100%": "v100", "10%": "v10", "1%": "v1"}
SECONDARY_INDEXES = ("knowledge_chunk", "knowledge_chunkembedding")


# --- setup ---------------------------------------------------------------------------------------------
def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    # Enough to touch most of the HNSW graph: after another database took the buffer cache, 20 left
    # the deepest path (the hybrid's 50-deep walk) reading pages the others had already cached.
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    parser.add_argument("--database", default="knowledge_bench")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--backend",
        choices=["postgres", "opensearch"],
        default="postgres",
        help="the retrieval backend measured (opensearch: the corpus is pushed to the local node first)",
    )
    parser.add_argument(
        "--long-queries",
        action="store_true",
        help="10-25 words drawn from the whole vocabulary, common words too, as real questions are",
    )
    return parser.parse_args()


# --- corpus --------------------------------------------------------------------------------------------
def make_vocabulary(rng: random.Random) -> list[str]:
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words: set[str] = set()
    while len(words) < VOCAB_SIZE:
        words.add("".join(rng.choices(syllables, k=rng.randint(2, 4))))
    return sorted(words, key=lambda w: rng.random())


def zipf_cumulative(size: int) -> list[float]:
    total, cumulative = 0.0, []
    for rank in range(1, size + 1):
        total += 1.0 / rank**ZIPF_S
        cumulative.append(total)
    return cumulative


def normalised(values: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


@dataclass
class Synthesiser:
    """Seeded source of chunk texts (Zipf words) and vectors (a projected latent point plus noise)."""

    rng: random.Random
    tokens: dict[str, str] = field(default_factory=dict)  # visibility group -> ACL token
    vocabulary: list[str] = field(init=False)
    cumulative: list[float] = field(init=False)
    projection: list[tuple[float, ...]] = field(init=False)

    def __post_init__(self) -> None:
        self.vocabulary, self.cumulative = make_vocabulary(self.rng), zipf_cumulative(VOCAB_SIZE)
        self.projection = [tuple(self.rng.gauss(0.0, 1.0) for _ in range(LATENT_DIMS)) for _ in range(DIM)]

    def text(self) -> str:
        words = self.rng.choices(self.vocabulary, cum_weights=self.cumulative, k=self.rng.randint(40, 120))
        return " ".join(words)

    def latent(self) -> list[float]:
        return [self.rng.gauss(0.0, 1.0) for _ in range(LATENT_DIMS)]

    def vector(self, latent: list[float]) -> list[float]:
        z = [x + self.rng.gauss(0.0, CHUNK_SPREAD) for x in latent]
        scale = NOISE * math.sqrt(LATENT_DIMS / DIM)
        return normalised(
            [sum(map(operator.mul, z, row)) + self.rng.gauss(0.0, scale) for row in self.projection]
        )


def vector_text(values: Sequence[float]) -> str:
    return "[" + ",".join(f"{v:.6f}" for v in values) + "]"


def document_groups(rng: random.Random) -> list[str]:
    groups = ["v100"]
    if rng.random() < 0.10:
        groups.append("v10")
    if rng.random() < 0.01:
        groups.append("v1")
    return groups


def group_tokens(tenant_id: int) -> dict[str, str]:
    """The ACL token of each visibility group (`g:<principal id>`)."""
    from knowledge.models import Principal

    rows = Principal.objects.filter(tenant_id=tenant_id, external_id__in=VISIBILITY.values())
    return {p.external_id: f"g:{p.pk}" for p in rows}


def corpus_ready(slug: str, chunks: int) -> bool:
    from knowledge.models import Chunk, ChunkEmbedding

    return (
        Chunk.objects.filter(tenant__slug=slug).count() == chunks
        and ChunkEmbedding.objects.filter(tenant__slug=slug, dimensions=DIM).count() == chunks
    )


def build_corpus(chunks: int, seed: int) -> tuple[int, float]:
    """Reuse the `bench-<chunks>` tenant when complete, else rebuild; returns (tenant id, load seconds)."""
    from django.db import connection, transaction

    from knowledge.models import Connector, Principal, Tenant
    from knowledge.store.search.bm25 import rebuild_statistics

    slug = f"bench-{chunks}-s{seed}-v{CORPUS_VERSION}"
    if corpus_ready(slug, chunks):
        tenant_graphs()  # a corpus loaded before per-tenant graphs existed gets its own now
        return Tenant.objects.get(slug=slug).pk, 0.0
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        # The database is the benchmark's own: wiping every tenant also clears whatever hangs off them.
        cursor.execute("TRUNCATE knowledge_tenant CASCADE")
        Tenant.objects.create(slug=Tenant.DEFAULT_SLUG, name="Primary")
        tenant = Tenant.objects.create(slug=slug, name=f"Benchmark {chunks}")
        connector = Connector.objects.create(tenant=tenant, name="bench", kind="api", config={})
        Principal.objects.bulk_create(
            Principal(tenant=tenant, kind=Principal.Kind.GROUP, external_id=g) for g in VISIBILITY.values()
        )
        index_defs = drop_secondary_indexes(cursor)
        copy_corpus(cursor.cursor, tenant.pk, connector.pk, chunks, random.Random(seed))
        # Loaded behind the write service: its terms had no numbers when the rows went in, so the
        # chunks have no BM25 weights yet. The rebuild numbers them and computes the weights.
        rebuild_statistics(cursor, tenant.pk)
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # CREATE INDEX refuses pending FK checks
        for sql in index_defs:
            cursor.execute(sql)
        for table in ("knowledge_document", "knowledge_chunk", "knowledge_chunkembedding"):
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), max(id)) FROM {table}")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) knowledge_document, knowledge_chunk, knowledge_chunkembedding")
    tenant_graphs()
    return tenant.pk, time.perf_counter() - started


def tenant_graphs() -> None:
    """The tenant's own HNSW graph, as the bulk worker's maintenance task builds it after a load."""
    from django.conf import settings

    from knowledge.services.vector_indexes import vector_indexes_maintain

    options = settings.RETRIEVAL_BACKENDS["postgres"]["OPTIONS"]
    report = vector_indexes_maintain(min_vectors=options["tenant_index_min_vectors"])
    if report.failed:
        sys.exit(f"building the tenant's vector index failed: {report.failed}")


def drop_secondary_indexes(cursor: Any) -> list[str]:
    """Bulk loading is far faster without the GIN/HNSW/b-tree indexes; they are rebuilt afterwards."""
    cursor.execute(
        "SELECT i.indexname, i.indexdef FROM pg_indexes i JOIN pg_class c ON c.relname = i.indexname "
        "JOIN pg_index x ON x.indexrelid = c.oid WHERE i.tablename = ANY(%s) AND NOT x.indisunique",
        [list(SECONDARY_INDEXES)],
    )
    rows = cursor.fetchall()
    for name, _ in rows:
        cursor.execute(f'DROP INDEX "{name}"')
    # Per-tenant graphs name tenants the load replaces: the maintenance service builds the new ones.
    return [definition for name, definition in rows if not name.startswith("chunk_embedding_hnsw_t")]


def copy_corpus(cursor: Any, tenant_id: int, connector_id: int, chunks: int, rng: random.Random) -> None:
    from tqdm import tqdm

    synth = Synthesiser(rng, group_tokens(tenant_id))
    cursor.execute(
        "CREATE TEMP TABLE bench_chunk (id bigint, document_id bigint, chunk_index int, content text, "
        "acl varchar[]) ON COMMIT DROP"
    )
    documents = math.ceil(chunks / CHUNKS_PER_DOC)
    with tqdm(total=chunks, desc="corpus", unit="chunk") as bar:
        for start in range(0, documents, 1000):
            batch = range(start + 1, min(documents, start + 1000) + 1)
            copy_documents(cursor, (tenant_id, connector_id), chunks, batch, synth)
            bar.update(len(batch) * CHUNKS_PER_DOC)
    insert_staged_chunks(cursor, tenant_id, connector_id)


def insert_staged_chunks(cursor: Any, tenant_id: int, connector_id: int) -> None:
    """The staged chunks (`bench_chunk`) into the chunk table, with their tsvectors and lexeme counts."""
    cursor.execute(
        "INSERT INTO knowledge_chunk (id, document_id, chunk_index, content, token_count, language, "
        "search_vector, lexeme_count, tenant_id, connector_id, environment_id, is_deleted, acl_tokens) "
        "SELECT id, document_id, chunk_index, content, 0, 'english', v.tsv, "
        "coalesce((SELECT sum(array_length(positions, 1)) FROM unnest(v.tsv)), 0), %s, %s, NULL, false, acl "
        "FROM bench_chunk CROSS JOIN LATERAL (SELECT to_tsvector('english', content) AS tsv) v",
        [tenant_id, connector_id],
    )


def copy_documents(
    cursor: Any, owner: tuple[int, int], chunks: int, documents: range, synth: Synthesiser
) -> None:
    """COPY one batch of documents with their chunks (to the staging table) and embeddings."""
    tenant_id, connector_id = owner
    doc_rows, chunk_rows, vector_rows = [], [], []
    grant_rows: list[tuple[int, int]] = []
    for doc_id in documents:
        groups, latent = document_groups(synth.rng), synth.latent()
        acl = [synth.tokens[g] for g in groups]
        grant_rows.extend((doc_id, int(synth.tokens[g][2:])) for g in groups)
        external = f"doc-{doc_id}"
        digest = hashlib.sha256(external.encode()).hexdigest()
        doc_rows.append((doc_id, external, f"Document {doc_id}", f"https://bench.example/{doc_id}", digest))
        for index in range(CHUNKS_PER_DOC):
            chunk_id = (doc_id - 1) * CHUNKS_PER_DOC + index + 1
            if chunk_id > chunks:
                break
            chunk_rows.append((chunk_id, doc_id, index, synth.text(), acl))
            vector_rows.append((chunk_id, vector_text(synth.vector(latent)), acl))
    copy_rows(
        cursor,
        "knowledge_document (id, external_id, title, source_url, content_hash, content, metadata, language, "
        "is_public, source_is_public, acl_origin, acl_override_by, deletion_origin, created_at, updated_at, "
        "tenant_id, connector_id) FROM STDIN",
        [
            (*r, "", "{}", "english", False, False, "request", "", "", "now", "now", tenant_id, connector_id)
            for r in doc_rows
        ],
    )
    for table in ("knowledge_document_allowed_principals", "knowledge_document_source_principals"):
        copy_rows(cursor, f"{table} (document_id, principal_id) FROM STDIN", grant_rows)
    copy_rows(cursor, "bench_chunk (id, document_id, chunk_index, content, acl) FROM STDIN", chunk_rows)
    copy_rows(
        cursor,
        "knowledge_chunkembedding (id, chunk_id, embedding, acl_tokens, model, dimensions, created_at, "
        "tenant_id, connector_id, is_deleted) FROM STDIN",
        [(r[0], *r, MODEL, DIM, "now", tenant_id, connector_id, False) for r in vector_rows],
    )


def copy_rows(cursor: Any, target: str, rows: list[tuple[Any, ...]]) -> None:
    with cursor.copy(f"COPY {target}") as copy:
        for row in rows:
            copy.write_row(row)


# --- queries -------------------------------------------------------------------------------------------
def query_words(rng: random.Random, vocabulary: list[str], cumulative: list[float], long: bool) -> list[str]:
    """3-8 Zipf-drawn words below the stop-word-like ranks; or, like a real question, 10-25 drawn from
    the whole vocabulary (so a few are in most chunks)."""
    if long:
        return rng.choices(vocabulary, cum_weights=cumulative, k=rng.randint(10, 25))
    return rng.choices(
        vocabulary[STOPWORD_RANKS:],
        cum_weights=cumulative[: VOCAB_SIZE - STOPWORD_RANKS],
        k=rng.randint(3, 8),
    )


def make_queries(count: int, seed: int, long: bool = False) -> list[tuple[list[float], str]]:
    """Vectors near random corpus vectors, and words (see `query_words`).

    Only the benchmark's own vectors: a database that also holds another corpus of the same dimension
    (the SciFact tenants of bench/keyword_latency.py) would otherwise lend it queries from a region of
    the graph where none of the benchmark tenant's vectors are.
    """
    from django.db import connection

    rng = random.Random(seed + 1)
    vocabulary, cumulative = make_vocabulary(random.Random(seed)), zipf_cumulative(VOCAB_SIZE)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT chunk_id FROM knowledge_chunkembedding WHERE dimensions = %s AND model = %s ORDER BY 1",
            [DIM, MODEL],
        )
        ids = rng.sample([row[0] for row in cursor.fetchall()], count)
        cursor.execute(
            "SELECT embedding::text FROM knowledge_chunkembedding WHERE chunk_id = ANY(%s) ORDER BY chunk_id",
            [ids],
        )
        sources = [json.loads(row[0]) for row in cursor.fetchall()]
    queries = []
    for source in sources:
        noisy = [v + rng.gauss(0.0, 0.3 / math.sqrt(DIM)) for v in source]
        queries.append((noisy, " ".join(query_words(rng, vocabulary, cumulative, long))))
    return queries


# --- timing --------------------------------------------------------------------------------------------
def timed(fn: Callable[[Any], Any], query: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn(query)
    return (time.perf_counter() - started) * 1000, result


def run_interleaved(
    queries: Sequence[tuple[list[float], str]], warmup: int, calls: dict[str, Callable[[Any], Any]]
) -> dict[str, list[tuple[float, Any]]]:
    """Each query through every call in turn (so machine noise hits all alike), after warm-up rounds.

    The call that goes first pays for the query's pages not yet in the buffer cache, so the order
    rotates from one query to the next.
    """
    for query in queries[:warmup]:
        for fn in calls.values():
            fn(query)
    results: dict[str, list[tuple[float, Any]]] = {name: [] for name in calls}
    order = list(calls.items())
    for i, query in enumerate(queries):
        for name, fn in order[i % len(order) :] + order[: i % len(order)]:
            results[name].append(timed(fn, query))
    return results


# --- raw SQL baseline and exact ground truth ---------------------------------------------------------------
# The tenant's own HNSW graph without the ACL filter (its predicate matches the partial index's).
RAW_VECTOR = (
    f"SELECT chunk_id FROM knowledge_chunkembedding WHERE tenant_id = %s AND dimensions = {DIM} "
    f"ORDER BY embedding::vector({DIM}) <=> %s::vector({DIM}) LIMIT {LIMIT}"
)
RAW_KEYWORD = (
    "SELECT c.id, ts_rank(c.search_vector, q.tsq, 1) AS score FROM knowledge_chunk c, "
    "(SELECT replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')::tsquery AS tsq) q "
    f"WHERE c.search_vector @@ q.tsq ORDER BY score DESC, c.id LIMIT {LIMIT}"
)
EXACT_VECTOR = (
    "SELECT chunk_id FROM knowledge_chunkembedding WHERE dimensions = %s AND tenant_id = %s "
    "AND NOT is_deleted AND acl_tokens && %s::varchar[] ORDER BY embedding <=> %s::vector, chunk_id LIMIT %s"
)


def sql_ids(sql: str, params: Sequence[Any] | dict[str, Any]) -> list[int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]


def raw_bm25(tenant_id: int, text: str) -> list[int]:
    """The keyword lane's BM25 query with no scope filter and no service layer."""
    from knowledge.store.search.bm25 import BM25_SQL, BM25Params, statement_args

    args = statement_args(tenant_id, text, ["english"], LIMIT, BM25Params())
    return sql_ids(BM25_SQL.replace("{where}", "TRUE"), args)


def exact_ids(tenant_id: int, group: str, vector: list[float]) -> list[int]:
    token = group_tokens(tenant_id)[group]
    return sql_ids(EXACT_VECTOR, [DIM, tenant_id, [token], vector_text(vector), LIMIT])


def recall(found: Sequence[int], truth: Sequence[int]) -> float:
    return len(set(found) & set(truth)) / max(1, len(truth))


# --- measurements ----------------------------------------------------------------------------------------
def scope_for(tenant_id: int, group: str) -> Any:
    from retrieval_backends.types import SearchScope

    return SearchScope(tenant_id=tenant_id, principal_tokens=frozenset({group_tokens(tenant_id)[group]}))


def service_paths(scope: Any) -> dict[str, Callable[[Any], Any]]:
    """The backend's lanes and the hybrid search, whichever backend is configured."""
    from knowledge.search import search_chunks
    from retrieval_backends.registry import get_backend

    backend = get_backend()
    return {
        "vector_lane": lambda q: backend.vector_search(scope, q[0], DIM, LIMIT, model=MODEL),
        "keyword_lane": lambda q: backend.keyword_search(scope, q[1], ["english"], LIMIT),
        "hybrid": lambda q: search_chunks(scope=scope, query_text=q[1], query_embedding=q[0], limit=LIMIT),
        # Lanes as deep as the raw queries (LIMIT instead of the candidates per lane): the fixed cost.
        "hybrid_same_depth": lambda q: search_chunks(
            scope=scope, query_text=q[1], query_embedding=q[0], limit=LIMIT, candidates=LIMIT
        ),
    }


def latency_paths(tenant_id: int, long_queries: bool) -> dict[str, Callable[[Any], Any]]:
    from bench import opensearch_paths as raw
    from knowledge.store.search.keyword import keyword_search as ts_rank_lane
    from retrieval_backends.base import ExternalIndex
    from retrieval_backends.registry import get_backend

    scope = scope_for(tenant_id, "v100")
    paths = service_paths(scope)
    if isinstance(get_backend(), ExternalIndex):  # its raw baseline is the index's own query
        paths["raw_vector"] = lambda q: raw.raw_vector(q[0], LIMIT, DIM)
        paths["raw_keyword"] = lambda q: raw.raw_keyword(q[1], LIMIT)
        return paths
    paths |= {
        # The lane before BM25 (and its fallback without statistics): OR query ranked by ts_rank.
        "keyword_lane_ts_rank": lambda q: ts_rank_lane(scope, q[1], ["english"], LIMIT, timeout_ms=5000),
        "raw_vector": lambda q: sql_ids(RAW_VECTOR, [tenant_id, vector_text(q[0])]),
        "raw_keyword": lambda q: raw_bm25(tenant_id, q[1]),
        "raw_keyword_ts_rank": lambda q: sql_ids(RAW_KEYWORD, [q[1]]),
    }
    if long_queries:  # ts_rank scores every chunk matching any word: seconds on common words at 100k
        del paths["keyword_lane_ts_rank"], paths["raw_keyword_ts_rank"]
    return paths


def measure_latency(
    tenant_id: int, queries: list[tuple[list[float], str]], warmup: int, long_queries: bool = False
) -> dict[str, Any]:
    """Lanes, hybrid service and the raw-SQL baseline, interleaved per query."""
    runs = run_interleaved(queries, warmup, latency_paths(tenant_id, long_queries))
    ms = {name: [t for t, _ in samples] for name, samples in runs.items()}
    ms["raw"] = [v + k for v, k in zip(ms["raw_vector"], ms["raw_keyword"], strict=True)]
    figures: dict[str, Any] = {name: summary(samples) for name, samples in ms.items()}
    figures["hybrid_p95_over_raw_p95"] = round(figures["hybrid"]["p95_ms"] / figures["raw"]["p95_ms"], 2)
    same_depth = figures["hybrid_same_depth"]["p95_ms"] / figures["raw"]["p95_ms"]
    figures["hybrid_same_depth_p95_over_raw_p95"] = round(same_depth, 2)
    figures["keyword_lane_mean_hits"] = sum(len(h) for _, h in runs["keyword_lane"]) / len(queries)
    return figures


def measure_visibility(
    tenant_id: int, queries: list[tuple[list[float], str]], warmup: int, level: str
) -> dict[str, Any]:
    """Filtered lane vs unfiltered HNSW (interleaved), each scored against exact search."""
    from bench.opensearch_paths import raw_vector
    from retrieval_backends.base import ExternalIndex
    from retrieval_backends.registry import get_backend

    backend, scope, token = get_backend(), scope_for(tenant_id, VISIBILITY[level]), VISIBILITY[level]
    unfiltered: Callable[[Any], Any] = lambda q: sql_ids(RAW_VECTOR, [tenant_id, vector_text(q[0])])  # noqa: E731
    if isinstance(backend, ExternalIndex):
        unfiltered = lambda q: raw_vector(q[0], LIMIT, DIM)  # noqa: E731
    runs = run_interleaved(
        queries,
        warmup,
        {
            "unfiltered": unfiltered,
            "filtered": lambda q: [
                h.chunk_id for h in backend.vector_search(scope, q[0], DIM, LIMIT, model=MODEL)
            ],
        },
    )
    truth = [exact_ids(tenant_id, token, q[0]) for q in queries]
    truth_all = truth if token == "v100" else [exact_ids(tenant_id, "v100", q[0]) for q in queries]
    figures: dict[str, Any] = {
        "filtered": summary([t for t, _ in runs["filtered"]]),
        "unfiltered": summary([t for t, _ in runs["unfiltered"]]),
        "recall_at_10": mean_recall([ids for _, ids in runs["filtered"]], truth),
        "unfiltered_recall_at_10": mean_recall([ids for _, ids in runs["unfiltered"]], truth_all),
    }
    figures["filtered_p95_over_unfiltered_p95"] = round(
        figures["filtered"]["p95_ms"] / figures["unfiltered"]["p95_ms"], 2
    )
    return figures


def mean_recall(found: Sequence[Sequence[int]], truth: Sequence[Sequence[int]]) -> float:
    return round(sum(recall(f, t) for f, t in zip(found, truth, strict=True)) / len(truth), 3)


# --- report ----------------------------------------------------------------------------------------------
def report_lines(figures: dict[str, Any]) -> Iterator[str]:
    lat = figures["latency"]
    kind = "long (10-25 words)" if figures.get("long_queries") else "short (3-8 words)"
    yield f"corpus: {figures['chunks']} chunks, {figures['queries']} {kind} queries, limit {LIMIT}"
    backend = figures.get("backend", "postgres")
    yield f"backend: {backend}; corpus load: {figures['load_seconds']:.1f} s (0 = reused)"
    if figures.get("pushed"):
        p = figures["pushed"]
        rate = p["chunks_per_second"]
        yield f"pushed to OpenSearch: {p['documents']} documents in {p['seconds']} s = {rate} chunks/s"
    yield f"exact_scan_max_rows: {figures['exact_scan_max_rows']}"
    yield f"{'path':<34}{'p50 ms':>10}{'p95 ms':>10}"
    for name in (
        "vector_lane",
        "keyword_lane",
        "keyword_lane_ts_rank",
        "hybrid",
        "hybrid_same_depth",
        "raw_vector",
        "raw_keyword",
        "raw_keyword_ts_rank",
        "raw",
    ):
        if name in lat:
            yield f"{name:<34}{lat[name]['p50_ms']:>10.2f}{lat[name]['p95_ms']:>10.2f}"
    yield f"hybrid p95 / raw p95: {lat['hybrid_p95_over_raw_p95']:.2f}"
    same_depth = lat["hybrid_same_depth_p95_over_raw_p95"]
    yield f"hybrid (lanes {LIMIT} deep, like raw) p95 / raw p95: {same_depth:.2f}"
    yield ""
    yield (
        f"{'visible':<9}{'recall@10':>10}{'p50 ms':>9}{'p95 ms':>9}{'unfilt p95':>12}"
        f"{'unfilt recall':>15}{'p95 ratio':>11}"
    )
    for level, v in figures["visibility"].items():
        yield (
            f"{level:<9}{v['recall_at_10']:>10.3f}{v['filtered']['p50_ms']:>9.2f}{v['filtered']['p95_ms']:>9.2f}"
            f"{v['unfiltered']['p95_ms']:>12.2f}{v['unfiltered_recall_at_10']:>15.3f}"
            f"{v['filtered_p95_over_unfiltered_p95']:>11.2f}"
        )


def main() -> None:
    args = parse_args()
    if args.backend == "opensearch":
        import os

        os.environ.update(
            KNOWLEDGE_RETRIEVAL_BACKEND="opensearch", OPENSEARCH_INDEX_PREFIX=f"bench-{args.chunks}"
        )
    setup_django(args.database)
    tenant_id, load_seconds = build_corpus(args.chunks, args.seed)
    pushed = None
    if args.backend == "opensearch":
        from bench.opensearch_paths import push_corpus

        pushed = push_corpus()
    from django.conf import settings

    queries = make_queries(args.queries + args.warmup, args.seed, args.long_queries)
    warm, measured = args.warmup, queries[args.warmup :]
    figures: dict[str, Any] = {"chunks": args.chunks, "queries": args.queries, "load_seconds": load_seconds}
    figures["long_queries"] = args.long_queries
    figures["backend"], figures["pushed"] = args.backend, pushed
    figures["exact_scan_max_rows"] = settings.RETRIEVAL_BACKENDS["postgres"]["OPTIONS"]["exact_scan_max_rows"]
    figures["latency"] = measure_latency(tenant_id, queries[:warm] + measured, warm, args.long_queries)
    figures["visibility"] = {
        level: measure_visibility(tenant_id, queries[:warm] + measured, warm, level) for level in VISIBILITY
    }
    print("\n".join(report_lines(figures)))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
