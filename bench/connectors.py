"""Ingest a real HTML corpus through the filesystem connector; then sanity searches over it.

The corpus is Debian's Python documentation (`apt-get install python3-doc`). Prints documents/s,
chunks/s and the share of the time spent extracting text (listing the folder through the sandboxed
extractors) versus writing (chunk, embed, store); the main-content extractor against the old
visible-text one on the same pages (characters kept, time); and, for a few queries, the top hits
with a check that the expected page is first.
Usage: python bench/connectors.py [--path /usr/share/doc/python3/html] [--embedder hashing] [--json F]

With --hosted: the Confluence, Google Drive, GitHub and Slack kinds against their local stubs instead
(bench/hosted.py): documents/s of a full sync, an unchanged resync and a permission-only sync, beside
the same documents written straight through the write service (the baseline, same run), and the
latency from a membership change at the source to search.
Usage: python bench/connectors.py --hosted [--docs 300] [--reps 3] [--kinds slack,github] [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from anywhere
from bench.common import setup_django  # noqa: E402

DOCS = Path("/usr/share/doc/python3/html")
# query -> the pages that count as a correct first hit
EXPECTED = {
    "list comprehension": {"tutorial/datastructures.html"},
    "create a virtual environment with venv": {"tutorial/venv.html", "library/venv.html"},
    "serialize an object to JSON": {"library/json.html"},
    "regular expression syntax": {"library/re.html", "howto/regex.html"},
    "asyncio event loop": {"library/asyncio-eventloop.html"},
    "formatted string literals f-strings": {"tutorial/inputoutput.html", "reference/lexical_analysis.html"},
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", type=Path, default=DOCS)
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--database", default="knowledge_bench")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--hosted", action="store_true", help="the hosted kinds against their stubs")
    parser.add_argument("--backend", default="postgres", choices=["postgres", "opensearch"], help="--hosted")
    parser.add_argument("--docs", type=int, default=300, help="--hosted: documents per kind")
    parser.add_argument("--reps", type=int, default=3, help="--hosted: membership changes per kind")
    parser.add_argument("--kinds", default="confluence,google_drive,github,slack", help="--hosted: which")
    return parser.parse_args()


def extract(path: Path) -> tuple[Any, float]:
    from knowledge.connectors.filesystem import FilesystemKind

    started = time.perf_counter()
    listing = FilesystemKind().list_source({"path": str(path), "patterns": ["**/*.html"]})
    return listing, time.perf_counter() - started


def compare_extractors(path: Path, sample: int = 60) -> dict[str, Any]:
    """trafilatura's main content against the hand-written visible-text parser, on the same pages."""
    from knowledge.connectors.extract.html import extract_html, html_to_text

    pages = sorted(path.rglob("*.html"))[:: max(1, len(list(path.rglob("*.html"))) // sample)][:sample]
    raw = [p.read_bytes() for p in pages]
    started = time.perf_counter()
    visible = sum(len(html_to_text(r.decode("utf-8", "replace"))[1]) for r in raw)
    visible_s = time.perf_counter() - started
    started = time.perf_counter()
    main = sum(len(extract_html(r).text) for r in raw)
    main_s = time.perf_counter() - started
    return {
        "pages": len(raw),
        "visible_text_chars": visible,
        "main_content_chars": main,
        "kept_ratio": round(main / visible, 3),
        "visible_text_s": round(visible_s, 2),
        "main_content_s": round(main_s, 2),
        "time_ratio": round(main_s / visible_s, 2),
    }


def write(listing: Any) -> tuple[Any, Any]:
    from knowledge.models import Connector, Tenant
    from knowledge.services.writes import documents_write

    tenant = Tenant.objects.create(slug=f"bench-connectors-{time.time_ns()}", name="bench")
    connector = Connector.objects.create(
        tenant=tenant, name="python-docs", kind="filesystem", config={"path": "/"}, default_is_public=True
    )
    return connector, documents_write(connector=connector, documents=listing.documents)


def searches(connector: Any) -> dict[str, Any]:
    from knowledge.search import search_chunks
    from retrieval_backends.types import SearchScope

    scope = SearchScope(
        tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}), connector_ids=(connector.pk,)
    )
    ids = dict(connector.documents.values_list("pk", "external_id"))
    out: dict[str, Any] = {}
    for query, expected in EXPECTED.items():
        started = time.perf_counter()
        hits = search_chunks(scope=scope, query_text=query, limit=5).hits
        top = [ids[h.document_id] for h in hits]
        ms = round((time.perf_counter() - started) * 1000, 1)
        out[query] = {"top": top[:3], "first_is_expected": bool(top) and top[0] in expected, "ms": ms}
    return out


def drop(connector: Any) -> None:
    from bench.ingest import drop_tenant

    drop_tenant(connector)


def hosted(args: argparse.Namespace) -> dict[str, Any]:
    from bench.hosted import KINDS, drop, measure

    figures: dict[str, Any] = {"embedder": args.embedder, "documents_per_kind": args.docs}
    for kind in KINDS:
        if kind.kind in args.kinds.split(","):
            figures[kind.kind] = measure(kind, args.docs, args.reps)
            tenant = figures[kind.kind].pop("tenant")
            print(kind.kind, json.dumps(figures[kind.kind]), file=sys.stderr, flush=True)
            drop(tenant)
    return figures


def main() -> None:
    args = parse_args()
    if args.hosted:
        prefix = f"bench-hosted-{time.time_ns()}"
        os.environ.update(KNOWLEDGE_RETRIEVAL_BACKEND=args.backend, OPENSEARCH_INDEX_PREFIX=prefix)
        setup_django(args.database)
        from bench.ingest import use_embedder

        use_embedder(args.embedder)
        try:
            report({"backend": args.backend, **hosted(args)}, args.json)
        finally:
            if args.backend == "opensearch":
                from retrieval_backends.registry import get_backend

                get_backend().client.indices.delete(index=f"{prefix}-*", ignore=404)  # type: ignore[attr-defined]
        return
    if not args.path.is_dir():
        sys.exit(f"{args.path} is missing: apt-get install python3-doc")
    setup_django(args.database)
    from bench.ingest import use_embedder

    use_embedder(args.embedder)
    listing, extract_s = extract(args.path)
    connector, stats = write(listing)
    try:
        total = extract_s + stats.seconds
        figures: dict[str, Any] = {
            "embedder": args.embedder,
            "documents": stats.documents,
            "chunks": stats.chunks,
            "errors": [e.message for e in [*listing.errors, *stats.errors]][:10],
            "extract_s": round(extract_s, 1),
            "write_s": round(stats.seconds, 1),
            "docs_per_s": round(stats.documents / total, 1),
            "chunks_per_s": round(stats.chunks / total, 1),
            "extraction_share": round(extract_s / total, 3),
            "extractors": compare_extractors(args.path),
            "searches": searches(connector),
        }
    finally:
        drop(connector)
    report(figures, args.json)


def report(figures: dict[str, Any], path: Path | None) -> None:
    print(json.dumps(figures, indent=2))
    if path:
        path.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
