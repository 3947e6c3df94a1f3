"""Ingest throughput through the service versus the bare embedder on the same chunk texts, in one run.

Also measures what keeping the BM25 statistics and term weights costs: the same ingest with the
weights trigger, then also the statistics triggers, disabled (with a cheap embedder, so the database
side dominates).
Usage: python bench/ingest.py [--docs 1000] [--embedder local] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from anywhere
from bench.common import setup_django  # noqa: E402

SCIFACT = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets" / "scifact"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=1000, help="a prefix of the corpus")
    parser.add_argument("--beir", type=Path, default=SCIFACT)
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--database", default="knowledge_bench")
    parser.add_argument("--json", type=Path, default=None)
    return parser.parse_args()


def load_documents(root: Path, count: int) -> list[Any]:
    from itertools import islice

    from knowledge.connectors.beir import iter_corpus

    return list(islice(iter_corpus(root), count))


def fresh_connector(label: str) -> Any:
    from knowledge.models import Connector, Tenant

    tenant = Tenant.objects.create(slug=f"bench-ingest-{label}-{time.time_ns()}", name="bench")
    return Connector.objects.create(tenant=tenant, name="beir", kind="api")


def drop_tenant(connector: Any) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for sql in (
            "DELETE FROM knowledge_chunkembedding WHERE tenant_id = %s",
            "DELETE FROM knowledge_chunk WHERE tenant_id = %s",
            "DELETE FROM knowledge_document WHERE tenant_id = %s",
            "DELETE FROM knowledge_keywordterm WHERE tenant_id = %s",
            "DELETE FROM knowledge_keywordstatistics WHERE tenant_id = %s",
        ):
            cursor.execute(sql, [connector.tenant_id])
    connector.delete()
    connector.tenant.delete()


def bare_embedder(documents: list[Any], embedder: Any, batch_size: int) -> dict[str, float]:
    """Chunk with the active chunker, then time only the embedder on those chunk texts."""
    from knowledge.pipeline.chunkers.base import ChunkSource
    from knowledge.pipeline.registry import get_chunker

    chunker = get_chunker()
    texts = [c.text for d in documents for c in chunker.chunk(ChunkSource(d.title, d.content, d.metadata))]
    started = time.perf_counter()
    for i in range(0, len(texts), batch_size):
        embedder.embed_batch(texts[i : i + batch_size])
    seconds = time.perf_counter() - started
    per_second = round(len(texts) / seconds, 1)
    return {"chunks": len(texts), "seconds": round(seconds, 2), "chunks_per_s": per_second}


def service_ingest(documents: list[Any], batch_size: int, label: str) -> dict[str, float]:
    from knowledge.services.ingestion import documents_ingest

    connector = fresh_connector(label)
    try:
        stats = documents_ingest(connector=connector, documents=documents, batch_size=batch_size)
    finally:
        drop_tenant(connector)
    return {
        "docs": stats.documents,
        "chunks": stats.chunks,
        "seconds": round(stats.seconds, 2),
        "docs_per_s": round(stats.docs_per_second, 1),
        "chunks_per_s": round(stats.chunks_per_second, 1),
    }


STATISTICS_TRIGGERS = tuple(f"knowledge_chunk_keyword_stats_{e}" for e in ("insert", "update", "delete"))
WEIGHTS_TRIGGERS = ("knowledge_chunk_bm25_weights",)


def set_triggers(names: tuple[str, ...], enabled: bool) -> None:
    from django.db import connection

    action = "ENABLE" if enabled else "DISABLE"
    with connection.cursor() as cursor:
        for trigger in names:
            cursor.execute(f"ALTER TABLE knowledge_chunk {action} TRIGGER {trigger}")


def without(names: tuple[str, ...], documents: list[Any], batch_size: int, label: str) -> dict[str, float]:
    set_triggers(names, False)
    try:
        return service_ingest(documents, batch_size, label)
    finally:
        set_triggers(names, True)


def ratio(figures: dict[str, Any], faster: str, slower: str) -> float:
    return round(figures[faster]["chunks_per_s"] / figures[slower]["chunks_per_s"], 3)


def use_embedder(spec: str) -> Any:
    from django.conf import settings

    from knowledge.pipeline.active import embedder_for, forget_active_embedder

    settings.KNOWLEDGE_EMBEDDER = spec
    forget_active_embedder()
    embedder = embedder_for(spec)
    embedder.embed_batch(["warm up the model"])
    return embedder


def main() -> None:
    args = parse_args()
    setup_django(args.database)
    documents = load_documents(args.beir, args.docs)
    figures: dict[str, Any] = {"documents": len(documents), "embedder": args.embedder}
    embedder = use_embedder(args.embedder)
    figures["bare_embedder"] = bare_embedder(documents, embedder, args.batch_size)
    figures["service_ingest"] = service_ingest(documents, args.batch_size, "main")
    figures["ingest_vs_bare"] = round(
        figures["service_ingest"]["chunks_per_s"] / figures["bare_embedder"]["chunks_per_s"], 3
    )
    use_embedder("hashing")
    figures["with_statistics"] = service_ingest(documents, args.batch_size, "stats-on")
    figures["without_weights"] = without(WEIGHTS_TRIGGERS, documents, args.batch_size, "weights-off")
    figures["without_statistics"] = without(
        STATISTICS_TRIGGERS + WEIGHTS_TRIGGERS, documents, args.batch_size, "stats-off"
    )
    figures["weights_cost"] = ratio(figures, "with_statistics", "without_weights")
    figures["statistics_cost"] = ratio(figures, "with_statistics", "without_statistics")
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
