"""HTTP fetches for the crawler: timeouts, a size cap, redirects followed by hand (bounded, in scope,
robots-checked), conditional requests, and a delay between two requests to the same host."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx

from knowledge.connectors.web.guard import AddressPolicy, BlockedAddress, GuardedBackend, GuardedTransport
from knowledge.connectors.web.options import USER_AGENT, WebOptions, host_of

REDIRECTS = {301, 302, 303, 307, 308}


class FetchError(Exception):
    """A URL that could not be fetched; `gone` for 404/410 (the page no longer exists), `blocked` when
    the SSRF guard refused the connection."""

    def __init__(self, message: str, *, gone: bool = False, blocked: bool = False) -> None:
        super().__init__(message)
        self.gone = gone
        self.blocked = blocked


@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    status: int  # 200 or 304
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def media_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    @property
    def charset(self) -> str | None:
        for part in self.headers.get("content-type", "").split(";")[1:]:
            name, _, value = part.partition("=")
            if name.strip().lower() == "charset" and value.strip():
                return value.strip().strip('"')
        return None


def normalize(url: str) -> str:
    """The URL without its fragment, with a lower-case scheme and host and a path of at least `/`."""
    parts = urlsplit(url.strip())
    netloc = parts.netloc.lower()
    return urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", parts.query, ""))


def make_client(options: WebOptions, backend: GuardedBackend | None = None) -> httpx.Client:
    policy = AddressPolicy.for_hosts(options.seed_hosts, allow_private=options.allow_private_addresses)
    return httpx.Client(
        transport=GuardedTransport(backend or GuardedBackend(policy)),
        timeout=httpx.Timeout(options.timeout_seconds),
        headers={"User-Agent": USER_AGENT},
        follow_redirects=False,
        trust_env=False,
    )


class Fetcher:
    """GETs within the connector's scope; `allowed(url)` is the robots.txt check of each hop."""

    def __init__(self, options: WebOptions, client: httpx.Client) -> None:
        self.options = options
        self.client = client
        self.allowed: Callable[[str], bool] = lambda url: True
        self.delays: dict[str, float] = {}  # per host, raised by a robots.txt Crawl-delay
        self._last: dict[str, float] = {}
        self.requests = 0

    def get(self, url: str, *, validators: dict[str, str] | None = None, limit: int | None = None) -> Fetched:
        """The page at `url` (following redirects); FetchError when it cannot be had."""
        headers = _conditional(validators or {})
        for _ in range(self.options.max_redirects + 1):
            if not self.allowed(url):
                raise FetchError(f"{url} is disallowed by robots.txt")
            response = self._request(url, headers, limit or self.options.max_page_bytes)
            if isinstance(response, Fetched):
                return response
            url = self._redirect_target(url, response)
        raise FetchError(f"more than {self.options.max_redirects} redirects")

    def _redirect_target(self, url: str, location: str) -> str:
        target = normalize(urljoin(url, location))
        if urlsplit(target).scheme not in {"http", "https"}:
            raise FetchError(f"redirected to a non-http URL: {target}")
        if not self.options.in_scope(target):
            raise FetchError(f"redirected off-host to {host_of(target)} (not in allowed_hosts): {target}")
        return target

    def _request(self, url: str, headers: dict[str, str], limit: int) -> Fetched | str:
        """The response, or the Location of a redirect."""
        self._wait(host_of(url))
        self.requests += 1
        try:
            with self.client.stream("GET", url, headers=headers) as response:
                if response.status_code in REDIRECTS and response.headers.get("location"):
                    return response.headers["location"]
                if response.status_code == 304:
                    return Fetched(url=url, status=304, headers=dict(response.headers))
                _raise_for_status(response)
                body = _read(response, limit, time.monotonic() + self.options.timeout_seconds)
                return Fetched(url=url, status=200, body=body, headers=dict(response.headers))
        except httpx.TimeoutException as exc:
            raise FetchError(
                f"timed out after {self.options.timeout_seconds:g} s ({type(exc).__name__})"
            ) from exc
        except httpx.HTTPError as exc:
            blocked = isinstance(exc.__cause__, BlockedAddress)
            raise FetchError(str(exc) or type(exc).__name__, blocked=blocked) from exc
        finally:
            self._last[host_of(url)] = time.monotonic()

    def _wait(self, host: str) -> None:
        delay = max(self.options.delay_seconds, self.delays.get(host, 0.0))
        if host in self._last:
            remaining = self._last[host] + delay - time.monotonic()
            if remaining > 0:
                time.sleep(remaining)


def _conditional(validators: dict[str, str]) -> dict[str, str]:
    headers = {}
    if validators.get("etag"):
        headers["If-None-Match"] = validators["etag"]
    if validators.get("last_modified"):
        headers["If-Modified-Since"] = validators["last_modified"]
    return headers


def _raise_for_status(response: httpx.Response) -> None:
    status = response.status_code
    if status in {404, 410}:
        raise FetchError(f"HTTP {status} (gone)", gone=True)
    if status != 200:
        raise FetchError(f"HTTP {status}")


def _read(response: httpx.Response, limit: int, deadline: float) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise FetchError(f"larger than the {limit}-byte limit ({declared} bytes declared)")
    parts: list[bytes] = []
    size = 0
    for data in response.iter_bytes():
        size += len(data)
        if size > limit:
            raise FetchError(f"larger than the {limit}-byte limit")
        if time.monotonic() > deadline:
            raise FetchError("took too long to download (a slow drip?)")
        parts.append(data)
    return b"".join(parts)
