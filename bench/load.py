"""Load test of POST /api/v1/search over loopback with SciFact's train questions, at several concurrencies.

By default it serves the benchmark database itself (SciFact ingested once with the chosen embedder, a
key issued), with gunicorn as `make run` does, or with `--server runserver` for comparison; or point
it at a running server with `--url` and `--key`. Each level runs for `--seconds` (and at most
`--max-requests` requests); it prints requests/s, p50/p95/p99 latency and the errors. `--mode index`
sends SciFact's documents (new ids each run) to POST /api/v1/index instead: concurrent ingest.
Usage: python bench/load.py [--server gunicorn|runserver] [--mode search|index] [--concurrency 1 4 16]
[--audit on|off|both]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from anywhere
from bench.common import ROOT, percentile, setup_django  # noqa: E402

SCIFACT = ROOT.parent / "shared" / "datasets" / "scifact"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--server", choices=["gunicorn", "runserver"], default="gunicorn")
    parser.add_argument("--mode", choices=["search", "index"], default="search")
    parser.add_argument("--url", default=None, help="a running server (then --key is needed)")
    parser.add_argument("--key", default=None)
    parser.add_argument("--embedder", default="local", help="embedder of the served corpus and queries")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--max-requests", type=int, default=100_000, help="per level")
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--beir", type=Path, default=SCIFACT)
    # Its own database: beside search_latency's 100k-chunk tenant the planner misjudges this tenant's
    # visible vectors and the HNSW graph is mostly someone else's, which no single-corpus server sees.
    parser.add_argument("--database", default="knowledge_bench_load")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--audit",
        choices=["on", "off", "both"],
        default="on",
        help="the audit log (both: servers with it off and on, alternating, and the p95 ratio per level)",
    )
    parser.add_argument("--rounds", type=int, default=2, help="with --audit both: off/on alternations")
    return parser.parse_args()


# --- the served corpus --------------------------------------------------------------------------------------
def prepare(root: Path, embedder: str) -> str:
    """SciFact in its own tenant, embedded by `embedder`; returns a fresh search key for it."""
    from django.conf import settings

    from knowledge.connectors.beir import corpus_size, iter_corpus
    from knowledge.models import ApiKey, Connector, Document, Tenant
    from knowledge.pipeline.active import forget_active_embedder
    from knowledge.services.ingestion import documents_ingest

    settings.KNOWLEDGE_EMBEDDER = embedder
    forget_active_embedder()
    tenant, _ = Tenant.objects.get_or_create(slug=f"bench-load-{embedder}", defaults={"name": "load"})
    connector, _ = Connector.objects.get_or_create(tenant=tenant, name="scifact", defaults={"kind": "api"})
    if Document.objects.filter(connector=connector).count() != corpus_size(root):
        documents_ingest(connector=connector, documents=iter_corpus(root), batch_size=64)
    scopes = [ApiKey.Scope.SEARCH, ApiKey.Scope.INDEX]
    # Unlimited (0): the benchmark measures the server, not the rate limit.
    _, plain = ApiKey.issue(
        tenant=tenant, name=f"load-{time.time_ns()}", scopes=scopes, rate_limit_per_minute=0
    )
    return plain


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(kind: str, embedder: str, audit: bool = True) -> Iterator[str]:
    """The API on a free loopback port, gunicorn (as `make run`) or the development server."""
    port = free_port()
    env = {**os.environ, "KNOWLEDGE_EMBEDDER": embedder}  # DATABASE_URL: set by setup_django
    env["KNOWLEDGE_AUDIT"] = "true" if audit else "false"
    env |= {"RUN_HOST": "127.0.0.1", "RUN_PORT": str(port), "DJANGO_DEBUG": "false"}
    python = Path(sys.executable)
    if kind == "gunicorn":
        command = [str(python.parent / "gunicorn"), "--config", "config/gunicorn.conf.py"]
    else:
        command = [str(python), "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def wait_healthy(url: str, process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(
                f"the server exited: {process.stderr.read().decode()[-2000:] if process.stderr else ''}"
            )
        try:
            connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=5)
            connection.request("GET", "/api/v1/health")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"the server at {url} did not become healthy in {timeout:.0f} s")


# --- the load ----------------------------------------------------------------------------------------
@dataclass
class Level:
    """What the clients of one concurrency level saw."""

    latencies_ms: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, ms: float, error: str | None) -> None:
        with self.lock:
            if error is None:
                self.latencies_ms.append(ms)
            else:
                self.errors[error] = self.errors.get(error, 0) + 1


class Bodies:
    """Request bodies in turn, shared by the clients of a level."""

    def __init__(self, path: str, make: Any, count: int) -> None:
        self.path, self.make, self.count = path, make, count
        self._next = 0
        self._lock = threading.Lock()

    def next(self) -> bytes:
        with self._lock:
            index, self._next = self._next, self._next + 1
        return self.make(index)  # type: ignore[no-any-return]


def client(url: str, key: str, bodies: Bodies, level: Level, stop: threading.Event, budget: Any) -> None:
    """One keep-alive connection sending requests back to back until the level ends."""
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=30)
    while not stop.is_set() and budget.acquire(blocking=False):
        body = bodies.next()
        started = time.perf_counter()
        try:
            connection.request("POST", bodies.path, body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            error = None if response.status in (200, 201) else f"HTTP {response.status}"
        except (OSError, http.client.HTTPException) as exc:
            error = type(exc).__name__
            connection.close()
            connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=30)
        level.record((time.perf_counter() - started) * 1000, error)
    connection.close()


def run_level(
    url: str, key: str, bodies: Bodies, concurrency: int, args: argparse.Namespace
) -> dict[str, Any]:
    level, stop = Level(), threading.Event()
    budget = threading.Semaphore(args.max_requests)
    threads = [
        threading.Thread(target=client, args=(url, key, bodies, level, stop, budget), daemon=True)
        for _ in range(concurrency)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    deadline = started + args.seconds
    while time.perf_counter() < deadline and any(t.is_alive() for t in threads):
        time.sleep(0.05)
    stop.set()
    for thread in threads:
        thread.join(timeout=35)
    seconds = time.perf_counter() - started
    ms = level.latencies_ms or [0.0]
    return {
        "concurrency": concurrency,
        "requests": len(level.latencies_ms),
        "seconds": round(seconds, 1),
        "req_per_s": round(len(level.latencies_ms) / seconds, 1),
        "p50_ms": round(percentile(ms, 0.50), 1),
        "p95_ms": round(percentile(ms, 0.95), 1),
        "p99_ms": round(percentile(ms, 0.99), 1),
        "errors": dict(level.errors),
    }


def report_line(server: str, row: dict[str, Any]) -> str:
    return (
        f"{server:<10} c={row['concurrency']:<3} {row['req_per_s']:>7.1f} req/s  p50 {row['p50_ms']:>6.1f}"
        f"  p95 {row['p95_ms']:>6.1f}  p99 {row['p99_ms']:>6.1f} ms  errors {row['errors'] or 0}"
    )


def search_bodies(root: Path, top_k: int) -> Bodies:
    from knowledge.connectors.beir import load_queries

    texts = list(load_queries(root).values())
    return Bodies(
        "/api/v1/search",
        lambda i: json.dumps({"query": texts[i % len(texts)], "top_k": top_k}).encode(),
        len(texts),
    )


def index_bodies(root: Path) -> Bodies:
    """SciFact's documents under ids new to this run, so every request writes."""
    from knowledge.connectors.beir import iter_corpus

    documents, run = list(iter_corpus(root)), time.time_ns()

    def make(i: int) -> bytes:
        d = documents[i % len(documents)]
        return json.dumps({"id": f"{run}-{i}", "title": d.title, "content": d.content}).encode()

    return Bodies("/api/v1/index", make, len(documents))


def main() -> None:
    args = parse_args()
    setup_django(args.database)
    bodies = search_bodies(args.beir, args.top_k) if args.mode == "search" else index_bodies(args.beir)
    results: dict[str, Any] = {"server": args.url or args.server, "mode": args.mode, "levels": []}
    results["embedder"] = args.embedder
    if args.audit == "both":
        results["audit"] = audit_comparison(args, bodies)
        if args.json:
            args.json.write_text(json.dumps(results, indent=2) + "\n")
        return
    with serving_or_given(args) as (url, key):
        run_level(url, key, bodies, 2, argparse.Namespace(seconds=5.0, max_requests=40))  # warm up
        for concurrency in args.concurrency:
            row = run_level(url, key, bodies, concurrency, args)
            results["levels"].append(row)
            print(report_line(results["server"], row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


def audit_comparison(args: argparse.Namespace, bodies: Bodies) -> dict[str, Any]:
    """The same levels against a server with the audit log off, then on, `--rounds` times; per level
    the median over rounds of each p95 and their ratio (on / off)."""
    if args.url:
        raise SystemExit("--audit both starts its own servers; leave out --url")
    key = prepare(args.beir, args.embedder)
    runs: dict[str, dict[int, list[float]]] = {"off": {}, "on": {}}
    for _ in range(args.rounds):
        for audit in ("off", "on"):
            with serving(args.server, args.embedder, audit=audit == "on") as url:
                run_level(url, key, bodies, 2, argparse.Namespace(seconds=5.0, max_requests=40))
                for concurrency in args.concurrency:
                    row = run_level(url, key, bodies, concurrency, args)
                    runs[audit].setdefault(concurrency, []).append(row["p95_ms"])
                    print(report_line(f"audit {audit}", row), flush=True)
    summary = {}
    for concurrency in args.concurrency:
        off, on = (sorted(runs[a][concurrency])[len(runs[a][concurrency]) // 2] for a in ("off", "on"))
        summary[concurrency] = {"p95_off_ms": off, "p95_on_ms": on, "ratio": round(on / off, 3)}
        print(f"c={concurrency:<3} p95 audit off {off:.1f} ms, on {on:.1f} ms: {on / off:.3f}x", flush=True)
    return summary


@contextmanager
def serving_or_given(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    if args.url:
        if not args.key:
            raise SystemExit("--url needs --key")
        yield args.url, args.key
        return
    key = prepare(args.beir, args.embedder)
    with serving(args.server, args.embedder) as url:
        yield url, key


if __name__ == "__main__":
    main()
