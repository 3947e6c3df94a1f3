"""Index-sync figures on the real OpenSearch node: reconcile throughput and commit-to-index latency.

Throughput: documents written in bulk (their on-commit pushes go to a private broker no worker
reads), then one foreground reconcile pushes them all. Latency: a real Celery worker (concurrency 2)
runs beside, documents are written one at a time, and each one's time from commit until PostgreSQL
records it as pushed is measured (add the index's 1 s refresh interval for searchability).
Usage: python bench/index_sync.py [--docs 2000] [--latency-docs 100] [--database knowledge_bench_sync]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # runnable as a script from anywhere
from bench.common import setup_django, summary  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--latency-docs", type=int, default=100)
    parser.add_argument(
        "--database", default="knowledge_bench_sync", help="its own: every dirty row is pushed"
    )
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    prefix = f"bench-sync-{uuid.uuid4().hex[:6]}"
    os.environ.update(
        KNOWLEDGE_RETRIEVAL_BACKEND="opensearch", OPENSEARCH_INDEX_PREFIX=prefix, KNOWLEDGE_EMBEDDER="hashing"
    )
    setup_django(args.database)
    from tests.brokers import PrivateRedis, broker_at

    broker = PrivateRedis()
    broker.start()
    try:
        with broker_at(broker.url):
            throughput(args.docs)
            latency(args.latency_docs, broker.url, prefix)
    finally:
        broker.stop()
        from retrieval_backends.registry import get_backend

        get_backend().client.indices.delete(index=f"{prefix}-*", ignore=404)  # type: ignore[attr-defined]


def _tenant_connector(name: str):  # type: ignore[no-untyped-def]
    from knowledge.models import Connector, Tenant

    tenant, _ = Tenant.objects.get_or_create(slug=name, defaults={"name": name})
    connector, _ = Connector.objects.get_or_create(tenant=tenant, name="bench", defaults={"kind": "api"})
    return connector


def throughput(count: int) -> None:
    from knowledge.connectors.types import SourceAcl, SourceDocument
    from knowledge.services.index_sync import index_reconcile
    from knowledge.services.writes import documents_write

    connector = _tenant_connector(f"sync-{uuid.uuid4().hex[:6]}")
    docs = [
        SourceDocument(
            external_id=f"d{i}",
            content=f"document {i} about ferries and harbours " * 20,
            acl=SourceAcl(public=True),
        )
        for i in range(count)
    ]
    documents_write(connector=connector, documents=docs)
    stats = index_reconcile(time_budget=None)
    print(f"reconcile: {stats.pushed} documents pushed in {stats.seconds:.1f} s = {stats.per_second:.0f}/s")


def latency(count: int, broker_url: str, prefix: str) -> None:
    from knowledge.models import Document
    from knowledge.services.documents import document_upsert

    env = {
        **os.environ,
        "DATABASE_URL": os.environ["DATABASE_URL"],  # setup_django pointed it at the bench database
        "REDIS_URL": broker_url,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "OPENSEARCH_INDEX_PREFIX": prefix,
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--concurrency=2", "--loglevel=WARNING"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        connector = _tenant_connector(f"latency-{uuid.uuid4().hex[:6]}")
        document_upsert(connector=connector, external_id="warm", content="warm up", is_public=True)
        time.sleep(5)  # the worker starts and drains what the throughput run queued
        samples = []
        for i in range(count):
            document = document_upsert(
                connector=connector, external_id=f"l{i}", content=f"latency probe {i}", is_public=True
            ).document
            started = time.monotonic()
            while True:
                row = Document.objects.filter(pk=document.pk).values("index_version", "synced_version").get()
                if row["synced_version"] >= row["index_version"]:
                    break
                time.sleep(0.002)
            samples.append((time.monotonic() - started) * 1000)
        figures = summary(samples)
        print(f"commit to pushed, one worker x 2: p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms")
    finally:
        worker.terminate()
        worker.wait(timeout=30)


if __name__ == "__main__":
    main()
