"""A threaded loopback HTTP server around an `answer(request)` callable, with scripted faults
(a status and headers answered for the next N requests to a path) and a record of every request."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes = b""  # a POST body that is not a form (git's pack negotiation)


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # sent as is (a malformed body)


@dataclass
class Fault:
    path: str  # a prefix of the request path
    reply: Reply
    times: int = 1


@dataclass
class StubServer:
    answer: Callable[[Request], Reply]
    port: int = 0
    requests: list[Request] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def fail(
        self,
        path: str,
        status: int,
        *,
        times: int = 1,
        headers: dict[str, str] | None = None,
        body: Any = None,
        raw: bytes | None = None,
    ) -> None:
        self.faults.append(
            Fault(
                path,
                Reply(status, {"message": f"HTTP {status}"} if body is None else body, headers or {}, raw),
                times,
            )
        )

    def calls(self, prefix: str) -> list[Request]:
        return [r for r in self.requests if r.path.startswith(prefix)]

    def respond(self, request: Request) -> Reply:
        self.requests.append(request)
        for fault in self.faults:
            if fault.times > 0 and request.path.startswith(fault.path):
                fault.times -= 1
                return fault.reply
        return self.answer(request)


@contextmanager
def serving(stub: StubServer) -> Iterator[StubServer]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            self._handle("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._handle("POST")

        def _handle(self, method: str) -> None:
            parts = urlsplit(self.path)
            query = dict(parse_qsl(parts.query))
            headers = {k.lower(): v for k, v in self.headers.items()}
            body = b""
            if method == "POST":
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
                    query.update(parse_qsl(body.decode()))
                    body = b""
            reply = stub.respond(Request(method, parts.path, query, headers, body))
            data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
            self.send_response(reply.status)
            replied = {name.lower() for name in reply.headers}
            if "content-type" not in replied:
                self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", stub.port), Handler)
    stub.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
