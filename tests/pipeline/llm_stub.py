"""A local OpenAI-compatible chat-completions stub on loopback: the real HTTP client talks to it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Script:
    """What the stub answers next: JSON answers (dicts), raw bodies (str), statuses or delays."""

    replies: list[Any] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    delay: float = 0.0

    def next(self) -> Any:
        return self.replies.pop(0) if self.replies else {"queries": [], "phrasings": [], "excerpts": []}


def _handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            script.requests.append(
                {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
            )
            if script.delay:
                time.sleep(script.delay)
            reply = script.next()
            status, payload = (reply[0], reply[1]) if isinstance(reply, tuple) else (200, reply)
            if isinstance(payload, dict):
                content = json.dumps(payload)
                payload = json.dumps(
                    {"choices": [{"message": {"content": content}}], "usage": {"total_tokens": 42}}
                )
            data = payload.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def llm_stub(script: Script) -> Iterator[str]:
    """Serve `script` on 127.0.0.1; yields the base URL (…/v1)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
