"""Ingest throughput with 1 and 2 Celery bulk workers, each pinned to one core, against the bare embedder
on the same cores, in one run.

The service figure is `manage.py ingest --workers N`'s path: the corpus as ingest jobs, shared by N
worker processes (`taskset -c i celery ... -Q bulk --pool=solo`), wall time from submission to the
last job finished. The bare figure embeds the same chunk texts in N processes pinned the same way.
The workers use a private Redis, so a running `make run` never sees these jobs.
With `--rounds N` the four measurements are interleaved N times (bare 1, service 1, bare 2, service 2, then
again) and the ratios are medians of each round's: a shared machine's speed drifts by more than the
differences measured, and neighbouring runs see the same drift.
Usage: python bench/ingest_workers.py [--docs 5183] [--rounds 1] [--cores 1 2] [--embedder local]
       [--json FILE]
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from anywhere
from bench.common import ROOT, bench_url, setup_django  # noqa: E402
from bench.ingest import SCIFACT, drop_tenant, fresh_connector, load_documents  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=5183, help="a prefix of the corpus (SciFact has 5,183)")
    parser.add_argument("--beir", type=Path, default=SCIFACT)
    parser.add_argument("--rounds", type=int, default=1, help="interleaved repetitions (medians reported)")
    parser.add_argument(
        "--cores", type=int, nargs="+", default=[1, 2], choices=[1, 2], help="core counts measured (1 2)"
    )
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--database", default="knowledge_bench")
    parser.add_argument("--json", type=Path, default=None)
    return parser.parse_args()


def private_redis() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    args = [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    return process, f"redis://127.0.0.1:{port}/0"


def _bare_child(spec: str, texts: list[str], core: int, ready: Any, go: Any, out: Any) -> None:
    os.sched_setaffinity(0, {core})
    from knowledge.pipeline.active import embedder_for

    embedder = embedder_for(spec)
    embedder.embed_batch(["warm up the model"])
    ready.wait()
    go.wait()
    started = time.perf_counter()
    embedder.embed_batch(texts)
    out.put(time.perf_counter() - started)


def bare(spec: str, texts: list[str], cores: int) -> dict[str, float]:
    """The embedder alone in `cores` processes, one core each, the texts split between them."""
    from django.db import connections

    connections.close_all()
    context = multiprocessing.get_context("fork")
    ready, go, out = context.Barrier(cores + 1), context.Barrier(cores + 1), context.Queue()
    shares = [texts[i::cores] for i in range(cores)]
    children = [
        context.Process(target=_bare_child, args=(spec, shares[i], i, ready, go, out)) for i in range(cores)
    ]
    for child in children:
        child.start()
    ready.wait()
    started = time.perf_counter()
    go.wait()
    for child in children:
        child.join()
    seconds = time.perf_counter() - started
    return {
        "cores": cores,
        "chunks": len(texts),
        "seconds": round(seconds, 2),
        "chunks_per_s": round(len(texts) / seconds, 1),
    }


def start_workers(count: int, env: dict[str, str]) -> list[subprocess.Popen[bytes]]:
    workers = []
    for core in range(count):
        command = ["taskset", "-c", str(core), sys.executable, "-m", "celery", "-A", "config", "worker",
                   "-Q", "bulk", "--pool=solo", "-n", f"bench{core}@%h", "--loglevel=WARNING",
                   "--without-gossip", "--without-mingle"]  # fmt: skip
        workers.append(subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL))
    return workers


def stop_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.wait(timeout=60)


def service(documents: list[Any], count: int, env: dict[str, str]) -> dict[str, float]:
    """`manage.py ingest --workers count` with `count` pinned workers (warmed up on a small job first)."""
    from knowledge.management.ingest_jobs import ingest_through_jobs

    workers = start_workers(count, env)
    try:
        warm = fresh_connector(f"warm{count}")
        ingest_through_jobs(warm, documents[: 4 * count], None, count, io.StringIO())
        drop_tenant(warm)
        connector = fresh_connector(f"workers{count}")
        started = time.perf_counter()
        fanned = ingest_through_jobs(connector, documents, None, count, io.StringIO())
        seconds = time.perf_counter() - started
        chunks = fanned.stats.chunks
        drop_tenant(connector)
    finally:
        stop_workers(workers)
    return {
        "workers": count,
        "docs": len(documents),
        "chunks": chunks,
        "seconds": round(seconds, 2),
        "docs_per_s": round(len(documents) / seconds, 1),
        "chunks_per_s": round(chunks / seconds, 1),
    }


def chunk_texts(documents: list[Any]) -> list[str]:
    from knowledge.pipeline.chunkers.base import ChunkSource
    from knowledge.pipeline.registry import get_chunker

    chunker = get_chunker()
    return [c.text for d in documents for c in chunker.chunk(ChunkSource(d.title, d.content, d.metadata))]


def one_round(
    spec: str, documents: list[Any], texts: list[str], env: dict[str, str], core_counts: list[int]
) -> dict[str, Any]:
    measured: dict[str, Any] = {}
    for cores in core_counts:
        measured[f"bare_{cores}"] = bare(spec, texts, cores)
        measured[f"service_{cores}"] = service(documents, cores, env)
        rate = measured[f"service_{cores}"]["chunks_per_s"] / measured[f"bare_{cores}"]["chunks_per_s"]
        measured[f"service_vs_bare_{cores}"] = round(rate, 3)
    if {1, 2} <= set(core_counts):
        rate = {name: figure["chunks_per_s"] for name, figure in measured.items() if isinstance(figure, dict)}
        measured["service_2_vs_1"] = round(rate["service_2"] / rate["service_1"], 3)
        measured["bare_2_vs_1"] = round(rate["bare_2"] / rate["bare_1"], 3)
    return measured


def summary(rounds: list[dict[str, Any]], documents: int, embedder: str) -> dict[str, Any]:
    """Each figure's median over the rounds (a single round: its own figures), and every round."""
    figures: dict[str, Any] = {"documents": documents, "embedder": embedder, "rounds": len(rounds)}
    for name, first in rounds[0].items():
        if isinstance(first, dict):
            figures[f"{name}_chunks_per_s"] = statistics.median(r[name]["chunks_per_s"] for r in rounds)
        else:
            figures[name] = statistics.median(r[name] for r in rounds)
    figures["each_round"] = rounds
    return figures


def main() -> None:
    args = parse_args()
    redis_process, redis_url = private_redis()
    os.environ["REDIS_URL"] = redis_url
    os.environ["KNOWLEDGE_EMBEDDER"] = args.embedder
    try:
        url = bench_url(args.database)
        setup_django(args.database)
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
        documents = load_documents(args.beir, args.docs)
        texts = chunk_texts(documents)
        cores = sorted(set(args.cores))
        rounds = [one_round(args.embedder, documents, texts, env, cores) for _ in range(max(1, args.rounds))]
        figures = summary(rounds, len(documents), args.embedder)
        print(json.dumps(figures, indent=2))
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2))
    finally:
        redis_process.terminate()


if __name__ == "__main__":
    main()
