"""bench/vector_paths.py's half-precision part: convert the corpus with the reindex's conversion, then
bytes and recall@10 of the halfvec copy (PostgreSQL) or of its byte vectors (OpenSearch)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from bench import scale
from bench.common import summary
from bench.search_latency import LIMIT, run_interleaved, scope_for

HALF = "@halfvec"
FLOAT_MODELS = ("bench-random-384", "bench-random-768")


def convert() -> float:
    """Give every vector a halfvec twin (`<model>@halfvec`), as `manage.py reindex` does; seconds."""
    from knowledge.store.vectors import convert_embeddings

    started = time.perf_counter()
    for model in FLOAT_MODELS:
        last = 0
        while True:
            read, last = convert_embeddings(model, model + HALF, last, 20_000)
            if not read:
                break
    scale.sql_run("ANALYZE knowledge_chunkembedding")
    return time.perf_counter() - started


def column_bytes() -> dict[str, int]:
    """Vector payload bytes per storage (the rows share one table, so their columns are compared)."""
    rows = scale.sql_rows(
        "SELECT model LIKE '%%@halfvec', sum(coalesce(pg_column_size(embedding), 0) + "
        "coalesce(pg_column_size(embedding_half), 0)), count(*) FROM knowledge_chunkembedding GROUP BY 1"
    )
    return {("halfvec" if half else "vector"): int(size) for half, size, _ in rows}


def graph_bytes() -> dict[str, int]:
    from knowledge.store.vector_indexes import tenant_indexes

    out = {"vector": 0, "halfvec": 0}
    for index in tenant_indexes().values():
        out[index.space.storage] += index.bytes
    return out


def lane_path(backend: Any, scope: Any, model: str) -> Callable[[Any], list[int]]:
    """The backend's vector lane, as searches run it."""

    def run(q: Any) -> list[int]:
        return [h.chunk_id for h in backend.vector_search(scope, q[0], 384, LIMIT, model=model)]

    return run


def recall_rows(chosen: dict[str, tuple[int, int]], args: argparse.Namespace, backend: Any) -> dict[str, Any]:
    """Per class and visibility: the lane over full and over half-precision vectors, against an exact
    float scan."""
    out: dict[str, Any] = {}
    for label, (tenant_id, _) in chosen.items():
        asked = scale.tenant_queries(tenant_id, args.queries + args.warmup, args.seed)
        for level, group in {"100%": "v100", "10%": "v10", "1%": "v1"}.items():
            scope = scope_for(tenant_id, group)
            truth = [scale.exact_truth(tenant_id, "bench-random-384", scope, q[0]) for q in asked]
            paths = {
                "vector": lane_path(backend, scope, "bench-random-384"),
                "halfvec": lane_path(backend, scope, "bench-random-384" + HALF),
            }
            runs = run_interleaved(asked, args.warmup, paths)
            out[f"{label} {level}"] = {
                name: {
                    **summary([t for t, _ in samples]),
                    "recall": scale.visible_recall([i for _, i in samples], truth),
                }
                for name, samples in runs.items()
            }
    return out


def report(args: argparse.Namespace, chosen: dict[str, tuple[int, int]]) -> None:
    from django.conf import settings

    from knowledge.services.vector_indexes import vector_indexes_maintain
    from retrieval_backends.registry import get_backend

    converted = convert()
    threshold = settings.RETRIEVAL_BACKENDS["postgres"]["OPTIONS"]["tenant_index_min_vectors"]
    built = vector_indexes_maintain(min_vectors=threshold).seconds
    columns, graphs = column_bytes(), graph_bytes()
    print(f"\nhalfvec: converted in {converted:.0f} s, graphs built in {built:.0f} s")
    for name, sizes in (("vector column", columns), ("tenant graphs", graphs)):
        saved = 1 - sizes["halfvec"] / sizes["vector"]
        print(f"{name}: vector {sizes['vector'] / 2**20:.0f} MB, halfvec {sizes['halfvec'] / 2**20:.0f} MB "
              f"({saved:.0%} smaller)")  # fmt: skip
    print_recall(recall_rows(chosen, args, get_backend()))
    if not args.keep:
        cleanup()


def print_recall(rows: dict[str, Any]) -> None:
    print(f"{'class, visibility':<22}{'vector p50/p95, recall':>30}{'halfvec p50/p95, recall':>30}")
    for name, paths in rows.items():
        cells = "".join(
            f"{p['p50_ms']:.1f}/{p['p95_ms']:.1f}, {p['recall'] if p['recall'] is not None else 'n/a'}".rjust(
                30
            )
            for p in paths.values()
        )
        print(f"{name:<22}{cells}")


def cleanup() -> None:
    from knowledge.store.vector_indexes import drop_index, tenant_indexes

    for name, index in tenant_indexes().items():
        if index.space.storage == "halfvec":
            drop_index(name, concurrently=False)
    scale.sql_run("DELETE FROM knowledge_chunkembedding WHERE model LIKE '%%@halfvec'")
    scale.sql_run("VACUUM (ANALYZE) knowledge_chunkembedding")


def opensearch_report(args: argparse.Namespace) -> None:
    """The same corpus on the OpenSearch node, float and byte vectors side by side."""
    from bench.opensearch_paths import push_corpus, wipe_indices
    from retrieval_backends.registry import get_backend

    backend = get_backend()
    converted = convert()
    wipe_indices()
    pushed = push_corpus()
    stats = backend.client.indices.stats(index=backend.names.all_aliases, metric="store")  # type: ignore[attr-defined]
    sizes = {
        k: v["total"]["store"]["size_in_bytes"] for k, v in stats["indices"].items() if "-vectors-384" in k
    }
    print(f"converted in {converted:.0f} s; pushed {pushed}")
    for name, size in sorted(sizes.items()):
        print(f"{name}: {size / 2**20:.0f} MB")
    print_recall(recall_rows(scale.representatives_384(), args, backend))
    if not args.keep:
        scale.sql_run("DELETE FROM knowledge_chunkembedding WHERE model LIKE '%%@halfvec'")
