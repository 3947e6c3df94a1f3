"""The vector paths tried for tenants inside one big shared database, and half-precision storage.

Runs on a corpus bench/scale.py loaded (`--database`, default its own). For the biggest 384-d tenant of
each size class at 100/10/1 % visibility: p50/p95 and recall@10 against an exact scan of

* `exact`: every visible row ranked;
* `shared ef=visible`: one HNSW graph of every tenant's vectors of the dimension (the design before
  per-tenant graphs), iterative scan with ef_search from the scope's share of its own tenant;
* `shared ef=graph`: the same graph with ef_search from the scope's share of the whole graph
  (capped at 1,000: pgvector's limit);
* `own graph`: the lane as it is (its tenant's own graph past the threshold, exact below it).

`--halfvec` then converts every vector to halfvec with the reindex's own conversion, builds the
per-tenant halfvec graphs, and reports the bytes of vectors and graphs in either storage and the
lane's recall@10 on the halfvec copy (exact float search is the truth). `--opensearch` does the
same against the OpenSearch node (byte vectors), after pushing the converted copy.
Usage: python bench/vector_paths.py [--database knowledge_scale] [--queries 50] [--halfvec] [--opensearch]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from anywhere
from bench import scale  # noqa: E402
from bench.common import setup_django, summary  # noqa: E402
from bench.halfvec_storage import lane_path  # noqa: E402
from bench.search_latency import LIMIT, mean_recall, run_interleaved, scope_for, vector_text  # noqa: E402

SHARED_INDEX = "chunk_embedding_hnsw_384"
HALF = "@halfvec"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", default="knowledge_scale")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--halfvec", action="store_true", help="also measure halfvec storage")
    parser.add_argument("--opensearch", action="store_true", help="halfvec as OpenSearch byte vectors")
    parser.add_argument("--keep", action="store_true", help="keep the shared graph and the halfvec copy")
    return parser.parse_args()


def build_shared_graph() -> float:
    """The per-dimension graph every tenant shared before (migration 0003's definition)."""
    started = time.perf_counter()
    scale.sql_run("SET maintenance_work_mem = '4GB'")
    scale.sql_run(
        f"CREATE INDEX IF NOT EXISTS {SHARED_INDEX} ON knowledge_chunkembedding USING hnsw "
        "((embedding::vector(384)) vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
        "WHERE dimensions = 384"
    )
    scale.sql_run("RESET maintenance_work_mem")
    return time.perf_counter() - started


def shared_path(scope: Any, ef: int) -> Callable[[Any], list[int]]:
    """HNSW over the shared graph: `tenant_id + 0` keeps the planner off the tenant's own index."""
    from knowledge.store.search import vector
    from knowledge.store.search.visibility import candidate_where
    from knowledge.store.sql import lane_fetch

    where, params = candidate_where(scope, 384, "bench-random-384")
    where = where.replace("e.tenant_id = %s", "e.tenant_id + 0 = %s", 1)
    statement = vector._hnsw_sql(where, 384, "vector")
    settings = {**vector.hnsw_settings(LIMIT, 1.0), "hnsw.ef_search": ef}

    def run(q: Any) -> list[int]:
        [rows] = lane_fetch(5000, [(statement, [vector_text(q[0]), *params, LIMIT, 0])], **settings)
        return [row[0] for row in rows]

    return run


def measure_paths(tenant_id: int, vectors: int, graph_rows: int, args: argparse.Namespace) -> dict[str, Any]:
    from knowledge.store.search import vector
    from retrieval_backends.registry import get_backend

    backend, out = get_backend(), {}
    asked = scale.tenant_queries(tenant_id, args.queries + args.warmup, args.seed)
    for level, (group, fraction) in {"100%": ("v100", 1.0), "10%": ("v10", 0.1), "1%": ("v1", 0.01)}.items():
        scope = scope_for(tenant_id, group)
        visible_in_graph = vectors * fraction / graph_rows
        paths = {
            "exact": exact_path(scope),
            "shared ef=visible": shared_path(scope, vector.choose_ef_search(LIMIT, fraction)),
            "shared ef=graph": shared_path(scope, min(1000, max(40, round(2 * LIMIT / visible_in_graph)))),
            "own graph": lane_path(backend, scope, "bench-random-384"),
        }
        runs = run_interleaved(asked, args.warmup, paths)
        truth = [ids for _, ids in runs["exact"]]
        out[level] = {
            name: {**summary([t for t, _ in samples]), "recall": _recall([i for _, i in samples], truth)}
            for name, samples in runs.items()
        }
    return out


def exact_path(scope: Any) -> Callable[[Any], list[int]]:
    from knowledge.store.search import vector
    from knowledge.store.search.visibility import candidate_where
    from knowledge.store.sql import lane_fetch

    where, params = candidate_where(scope, 384, "bench-random-384")
    statement = vector._exact_sql(where, "vector")

    def run(q: Any) -> list[int]:
        [rows] = lane_fetch(5000, [(statement, [vector_text(q[0]), *params, LIMIT, 0])])
        return [row[0] for row in rows]

    return run


def _recall(found: list[list[int]], truth: list[list[int]]) -> float | None:
    pairs = [(f, t) for f, t in zip(found, truth, strict=True) if t]
    return mean_recall([f for f, _ in pairs], [t for _, t in pairs]) if pairs else None


def print_paths(figures: dict[str, Any]) -> None:
    built = figures["shared_build_seconds"]
    print(f"shared 384-d graph: {figures['graph_rows']} vectors, built in {built:.0f} s")
    print(f"{'class':<10}{'vectors':>9} {'vis':<5}" + "".join(f"{p:>26}" for p in figures["paths"]))
    for label, row in figures["tenants"].items():
        for level, paths in row["levels"].items():
            cells = "".join(_cell(paths[p]) for p in figures["paths"])
            print(f"{label:<10}{row['vectors']:>9} {level:<5}{cells}")


def _cell(path: dict[str, Any]) -> str:
    recall = "n/a" if path["recall"] is None else f"{path['recall']:.3f}"
    return f"{path['p50_ms']:.1f}/{path['p95_ms']:.1f} r={recall}".rjust(26)


def main() -> None:
    args = parse_args()
    if args.opensearch:
        os.environ.update(KNOWLEDGE_RETRIEVAL_BACKEND="opensearch",
                          OPENSEARCH_INDEX_PREFIX=f"{args.database}-shared".replace("_", "-"))  # fmt: skip
    setup_django(args.database)
    from bench import halfvec_storage  # after Django is set up

    if args.opensearch:
        halfvec_storage.opensearch_report(args)
        return
    chosen = scale.representatives_384()
    graph_rows = int(
        scale.sql_rows("SELECT count(*) FROM knowledge_chunkembedding WHERE dimensions = 384")[0][0]
    )
    figures: dict[str, Any] = {
        "graph_rows": graph_rows,
        "shared_build_seconds": build_shared_graph(),
        "tenants": {},
    }
    scale.sql_run("ANALYZE knowledge_chunkembedding")
    for label, (tenant_id, vectors) in chosen.items():
        levels = measure_paths(tenant_id, vectors, graph_rows, args)
        figures["tenants"][label] = {"vectors": vectors, "levels": levels}
    figures["paths"] = list(next(iter(next(iter(figures["tenants"].values()))["levels"].values())))
    if not args.keep:
        scale.sql_run(f"DROP INDEX IF EXISTS {SHARED_INDEX}")
    print_paths(figures)
    if args.halfvec:
        halfvec_storage.report(args, chosen)


if __name__ == "__main__":
    main()
