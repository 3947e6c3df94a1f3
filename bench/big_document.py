"""Peak memory and time of writing one document near the 2,000,000-character limit, as a job worker does.

Runs the write in a fresh process and reports its peak RSS (ru_maxrss) before and after, the chunks
written and the seconds, next to the same for a 100,000-character document (the in-request limit).
Usage: python bench/big_document.py [--chars 2000000] [--embedder local] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from anywhere
from bench.common import setup_django  # noqa: E402
from bench.ingest import drop_tenant, fresh_connector  # noqa: E402

WORDS = [
    "tide",
    "harbour",
    "ferry",
    "cargo",
    "crew",
    "pier",
    "night",
    "schedule",
    "lantern",
    "rope",
    "anchor",
    "deck",
]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chars", type=int, default=2_000_000)
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--database", default="knowledge_bench")
    parser.add_argument("--json", type=Path, default=None)
    return parser.parse_args()


def text_of(chars: int) -> str:
    paragraphs, size, i = [], 0, 0
    while size < chars:
        sentence = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(12)) + f" number {i}."
        paragraphs.append(sentence if i % 8 else f"\n\n## Section {i}\n{sentence}")
        size += len(paragraphs[-1]) + 1
        i += 1
    return " ".join(paragraphs)[:chars]


def _write(database: str, embedder: str, chars: int, out: Any) -> None:
    setup_django(database)
    from django.conf import settings

    from knowledge.connectors.types import SourceAcl, SourceDocument
    from knowledge.pipeline.active import active_embedder, forget_active_embedder
    from knowledge.services.writes import documents_write

    settings.KNOWLEDGE_EMBEDDER = embedder
    forget_active_embedder()
    active_embedder().embed_batch(["warm up the model"])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    connector = fresh_connector(f"big{chars}")
    source = SourceDocument(external_id="big", content=text_of(chars), acl=SourceAcl.of(public=True))
    started = time.perf_counter()
    stats = documents_write(connector=connector, documents=[source], strict=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    drop_tenant(connector)
    out.put({"chars": chars, "chunks": stats.chunks, "seconds": round(seconds, 1),
             "rss_before_mb": round(before / 1024), "peak_rss_mb": round(after / 1024)})  # fmt: skip


def measure(database: str, embedder: str, chars: int) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    child = context.Process(target=_write, args=(database, embedder, chars, out))
    child.start()
    child.join()  # the child puts a small dict: joining first cannot dead-lock on the queue
    if child.exitcode != 0 or out.empty():
        raise SystemExit(f"the measuring process failed (exit code {child.exitcode}); see above")
    figures: dict[str, Any] = out.get()
    return figures


def main() -> None:
    args = parse_args()  # each measurement sets Django up in its own fresh process
    figures = {
        "embedder": args.embedder,
        "in_request_limit": measure(args.database, args.embedder, 100_000),
        "big": measure(args.database, args.embedder, args.chars),
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
