"""What the search audit log costs per search, in CPU: on the request path, and in the writer's COPY.

The load test (bench/load.py --audit both) compares whole servers, whose p95 at a given concurrency
moves by several per cent between identical rounds on a shared machine. This isolates the two parts
the log adds: `search_record` on the request path (into a writer whose thread is busy elsewhere) and
the batched COPY (client and server, in a transaction rolled back), per entry, in microseconds, with a
search's own time at the same run's request rate for scale when `--search-ms` is given.
Usage: python bench/audit_cost.py [--entries 10000] [--search-ms 17]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from anywhere
from bench.common import setup_django  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--database", default="knowledge_bench")
    parser.add_argument(
        "--search-ms", type=float, default=None, help="CPU milliseconds of one search, for the share"
    )
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    setup_django(args.database)
    from django.conf import settings
    from django.db import transaction

    from knowledge.models import Tenant
    from knowledge.services import audit
    from knowledge.store.audit import search_entries_copy

    tenant, _ = Tenant.objects.get_or_create(slug="bench-audit", defaults={"name": "Audit cost"})
    settings.KNOWLEDGE_AUDIT, settings.KNOWLEDGE_AUDIT_WRITES = True, "background"
    writer = audit.AuditWriter()
    release = threading.Event()
    writer._run = lambda: None if release.wait() else None  # type: ignore[method-assign]  # writes nothing
    audit.WRITER, previous = writer, audit.WRITER
    previous_max, audit.MAX_PENDING = audit.MAX_PENDING, args.entries
    try:
        started = time.perf_counter()
        for i in range(args.entries):
            audit.search_record(
                tenant_id=tenant.pk,
                actor="on_behalf_of",
                principal="erin@example.com",
                query="does vitamin d supplementation reduce the risk of fractures in older adults",
                filters={"top_k": 10, "environment": "production"},
                document_ids=range(i, i + 10),
            )
        on_path = (time.perf_counter() - started) / args.entries * 1e6
        entries = list(writer.pending())
    finally:
        release.set()
        audit.WRITER, audit.MAX_PENDING = previous, previous_max
    print(f"request path (search_record): {on_path:.1f} us per search")
    for size in (100, audit.BATCH):
        with transaction.atomic():
            started = time.perf_counter()
            for start in range(0, len(entries), size):
                search_entries_copy(entries[start : start + size])
            per_entry = (time.perf_counter() - started) / len(entries) * 1e6
            transaction.set_rollback(True)
        print(f"writer COPY, batches of {size}: {per_entry:.1f} us per entry (client and server)")
        if args.search_ms:
            share = (on_path + per_entry) / (args.search_ms * 1000)
            print(f"  together {share:.2%} of a {args.search_ms} ms search")


if __name__ == "__main__":
    main()
