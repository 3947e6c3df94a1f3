"""A local OpenAI-compatible and Ollama embedding server with hashing vectors that fails on request.

It stands in for a hosted embedding API, which cannot run here; the real HTTP embedders talk to it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from knowledge.pipeline.embedders.hashing import HashingEmbedder

DIM = 8
SCALE = 3.0  # the server's vectors are not unit length: the client must normalise them


@dataclass
class Fault:
    """What the server does with one request instead of answering normally."""

    status: int = 0
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    vector_length: int = 0


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    payload: dict[str, Any]


class FakeEmbeddingServer(ThreadingHTTPServer):
    """Serves /v1/embeddings and /api/embed with hashing vectors; queued faults are used one per request."""

    daemon_threads = True

    def __init__(self, dimension: int = DIM) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.faults: list[Fault] = []
        self.seen: list[Seen] = []
        self.reverse_order = False
        self.lock = threading.Lock()
        self.dimension = dimension
        self.vectors = HashingEmbedder(dimension)

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out closed its socket; nothing to report

    def record(self, seen: Seen) -> Fault | None:
        with self.lock:
            self.seen.append(seen)
            return self.faults.pop(0) if self.faults else None

    def reply(self, path: str, texts: list[str], length: int) -> dict[str, Any]:
        vectors = [[SCALE * v for v in self.vectors.embed(t)][:length] for t in texts]
        if path == "/api/embed":
            return {"model": "m", "embeddings": vectors}
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        return {"object": "list", "data": data[::-1] if self.reverse_order else data}


class _Handler(BaseHTTPRequestHandler):
    server: FakeEmbeddingServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        fault = self.server.record(Seen(self.path, dict(self.headers), payload)) or Fault()
        time.sleep(fault.delay)
        if self.path not in {"/v1/embeddings", "/api/embed"}:
            fault = Fault(status=404, body={"error": "not found"})
        if fault.status:
            self._send(fault.status, fault.body, fault.headers)
            return
        self._send(
            200,
            self.server.reply(self.path, payload["input"], fault.vector_length or self.server.dimension),
            {},
        )

    def _send(self, status: int, body: Any, headers: dict[str, str]) -> None:
        raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@contextmanager
def embedding_server(dimension: int = DIM) -> Iterator[FakeEmbeddingServer]:
    """The server, answering on a free loopback port until the block ends."""
    fake = FakeEmbeddingServer(dimension)
    thread = threading.Thread(target=fake.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.shutdown()
        fake.server_close()
