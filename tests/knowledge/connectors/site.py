"""A small website on loopback for the web-connector tests: robots.txt, sitemaps, validators, traps.

Requests are recorded (path, Host header, conditional headers). The same server answers for
`127.0.0.1:PORT` (the admin's seed host) and `localhost:PORT` (another host, by name), so a test can
tell from the Host header whether the crawler ever left the seed host.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LAST_MODIFIED = "Wed, 21 Oct 2015 07:28:00 GMT"
FILLER = "Every page of this site has a paragraph long enough to be its main content."


@dataclass(frozen=True)
class Request:
    path: str
    host: str
    if_none_match: str | None
    if_modified_since: str | None

    @property
    def conditional(self) -> bool:
        return bool(self.if_none_match or self.if_modified_since)


@dataclass
class Site:
    port: int = 0
    requests: list[Request] = field(default_factory=list)
    times: list[tuple[str, float]] = field(default_factory=list)
    slow_seconds: float = 0.0  # how long /slow.html makes the crawler wait
    pages: dict[str, str] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)  # paths that answer with an error
    content_types: dict[str, str] = field(default_factory=dict)  # paths served with their own type
    delays: dict[str, float] = field(default_factory=dict)  # seconds a path waits before answering

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def page_requests(self) -> list[Request]:
        return [r for r in self.requests if r.path.endswith(".html") or r.path == "/"]


def article(title: str, body: str, links: tuple[str, ...] = ()) -> str:
    anchors = " ".join(f'<a href="{href}">{href}</a>' for href in links)
    return (
        f"<html><head><title>{title}</title></head><body><nav>{anchors}</nav>"
        f"<article><h1>{title}</h1><p>{body} {FILLER}</p></article><footer>Footer text</footer></body></html>"
    )


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            site.requests.append(
                Request(
                    self.path,
                    self.headers.get("Host", ""),
                    self.headers.get("If-None-Match"),
                    self.headers.get("If-Modified-Since"),
                )
            )
            site.times.append((self.path, time.monotonic()))
            time.sleep(site.delays.get(self.path, 0.0))
            if self.path in site.statuses:
                self.send_error(site.statuses[self.path])
            elif self.path in site.redirects:
                self.send_response(302)
                self.send_header("Location", site.redirects[self.path])
                self.end_headers()
            elif self.path == "/slow.html" and site.slow_seconds:
                time.sleep(site.slow_seconds)
                self._send(200, "text/html", site.pages.get(self.path, ""))
            elif self.path == "/huge.html":  # no Content-Length: the crawler must stop reading by itself
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                for _ in range(300):
                    self.wfile.write(b"<p>" + b"big words " * 1000 + b"</p>")
            elif self.path == "/lastmod.html":
                self._validated(site.pages[self.path], last_modified=LAST_MODIFIED)
            elif self.path in site.pages:
                self._validated(site.pages[self.path], etag=True)
            else:
                self.send_error(404)

        def _validated(self, body: str, *, etag: bool = False, last_modified: str | None = None) -> None:
            tag = f'"{hashlib.sha256(body.encode()).hexdigest()[:16]}"' if etag else None
            if (tag and self.headers.get("If-None-Match") == tag) or (
                last_modified and self.headers.get("If-Modified-Since") == last_modified
            ):
                self.send_response(304)
                self.end_headers()
                return
            content_type = "application/xml" if self.path.endswith(".xml") else "text/html; charset=utf-8"
            content_type = site.content_types.get(self.path, content_type)
            headers = {"ETag": tag} if tag else {"Last-Modified": last_modified or ""}
            self._send(200, content_type, body, headers)

        def _send(
            self, status: int, content_type: str, body: str, headers: dict[str, str] | None = None
        ) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def serve(site: Site) -> Iterator[Site]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
    site.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
