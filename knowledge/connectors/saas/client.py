"""The REST client of the hosted-source kinds: one origin, bounded bodies, and retries that honour
429 / `Retry-After` (and GitHub's rate-limit reset) with a bounded wait, backing off on 5xx and
connection errors.

A wait longer than `max_wait_seconds`, or more attempts than `attempts`, raises `ApiError`: the sync
then stops that part of the listing, marks the run incomplete, and prunes nothing.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

RETRIED = {429, 500, 502, 503, 504}
MAX_BODY_BYTES = 20 * 1024 * 1024
USER_AGENT = "knowledge-retrieval-connector/1.0"


class ApiError(Exception):
    """A request that failed for good: `status` 0 for a transport error or a bad body."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status

    @property
    def gone(self) -> bool:
        return self.status in {404, 410}

    @property
    def denied(self) -> bool:
        return self.status in {401, 403}


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5
    max_wait_seconds: float = 60.0
    backoff_seconds: float = 1.0


@dataclass(frozen=True)
class Page:
    """One response: its decoded JSON body and headers."""

    body: Any
    headers: Mapping[str, str]
    status: int = 200


class ApiClient:
    """GETs (and form POSTs) against one API origin, with an auth header and retries."""

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str],
        timeout_seconds: float = 30.0,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        parts = urlsplit(self.base_url)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.retry = retry or RetryPolicy()
        self.sleep = sleep
        self.requests = 0
        self.waited_seconds = 0.0
        self.http = httpx.Client(
            headers={"User-Agent": USER_AGENT, **headers},
            timeout=httpx.Timeout(timeout_seconds),
            follow_redirects=False,
            trust_env=False,
        )

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.close()

    def url(self, path_or_url: str) -> str:
        """An absolute URL on this client's origin; a link elsewhere is refused (the credential must
        never be sent to another host, whatever a response's paging link says)."""
        if "://" not in path_or_url:
            return f"{self.base_url}/{path_or_url.lstrip('/')}"
        parts = urlsplit(path_or_url)
        if f"{parts.scheme}://{parts.netloc}" != self.origin:
            raise ApiError(f"refusing a link off the API's origin: {path_or_url}")
        return path_or_url

    def get(
        self, path: str, params: Mapping[str, Any] | None = None, headers: Mapping[str, str] | None = None
    ) -> Page:
        return self._call("GET", path, params=params, headers=headers)

    def post(self, path: str, data: Mapping[str, Any]) -> Page:
        return self._call("POST", path, data=data)

    def download(self, path: str, params: Mapping[str, Any] | None = None) -> bytes:
        """A body that is not JSON (a file, an export), as bytes (bounded like every body)."""
        return self._call("GET", path, params=params, raw=True).body  # type: ignore[no-any-return]

    def _call(self, method: str, path: str, *, raw: bool = False, **kwargs: Any) -> Page:
        url = self.url(path)
        for attempt in range(1, self.retry.attempts + 1):
            try:
                status, headers, body = self._once(method, url, **kwargs)
            except httpx.TransportError as exc:
                if attempt == self.retry.attempts:
                    raise ApiError(f"{method} {url}: {type(exc).__name__}: {exc}") from exc
                self._wait(self._backoff(attempt), url)
                continue
            if status in RETRIED or _rate_limited(status, headers):
                if attempt == self.retry.attempts:
                    raise ApiError(f"{method} {url}: HTTP {status} after {attempt} attempts", status=status)
                self._wait(_retry_after(headers) or self._backoff(attempt), url)
                continue
            if raw and 200 <= status < 300:
                return Page(body=body, headers=headers, status=status)
            return _page(method, url, status, headers, body)
        raise AssertionError("unreachable")

    def _once(self, method: str, url: str, **kwargs: Any) -> tuple[int, Mapping[str, str], bytes]:
        self.requests += 1
        with self.http.stream(method, url, **kwargs) as response:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
                raise ApiError(f"{url}: a {declared}-byte body is over the {MAX_BODY_BYTES}-byte limit")
            body = bytearray()
            for data in response.iter_bytes():
                body += data
                if len(body) > MAX_BODY_BYTES:
                    raise ApiError(f"{url}: body over the {MAX_BODY_BYTES}-byte limit")
            return response.status_code, response.headers, bytes(body)

    def _backoff(self, attempt: int) -> float:
        return self.retry.backoff_seconds * 2 ** (attempt - 1) * (1 + random.random() / 4)

    def _wait(self, seconds: float, url: str) -> None:
        if seconds > self.retry.max_wait_seconds:
            raise ApiError(
                f"{url}: rate limited for {seconds:.0f} s "
                f"(over the {self.retry.max_wait_seconds:g} s wait limit)",
                status=429,
            )
        self.waited_seconds += seconds
        self.sleep(seconds)


def _rate_limited(status: int, headers: Mapping[str, str]) -> bool:
    """GitHub answers an exhausted rate limit with 403 and `x-ratelimit-remaining: 0`."""
    return status == 403 and headers.get("x-ratelimit-remaining") == "0"


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `Retry-After` (seconds or an HTTP date) or `x-ratelimit-reset` (epoch)."""
    value = headers.get("retry-after", "").strip()
    if value:
        if value.isdigit():
            return float(value)
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None
    reset = headers.get("x-ratelimit-reset", "")
    if reset.isdigit() and headers.get("x-ratelimit-remaining") == "0":
        return max(0.0, int(reset) - time.time())
    return None


def _page(method: str, url: str, status: int, headers: Mapping[str, str], body: bytes) -> Page:
    if status == 304:
        return Page(body=None, headers=headers, status=304)
    if not 200 <= status < 300:
        raise ApiError(f"{method} {url}: HTTP {status}{_detail(body)}", status=status)
    try:
        decoded = json.loads(body) if body else None
    except ValueError as exc:
        raise ApiError(f"{method} {url}: the body is not JSON ({exc})", status=status) from exc
    return Page(body=decoded, headers=headers, status=status)


def _detail(body: bytes) -> str:
    try:
        message = json.loads(body).get("message") or json.loads(body).get("error")
    except (ValueError, AttributeError):
        return ""
    return f" ({str(message)[:200]})" if message else ""


def link_pages(client: ApiClient, path: str, params: Mapping[str, Any], *, max_pages: int) -> Iterator[Page]:
    """Pages of a `Link: <...>; rel="next"` collection (GitHub), at most `max_pages`; raises
    `PagingCapped` when there are more, so a caller never mistakes a cut list for the whole one."""
    page = client.get(path, params)
    for _ in range(max_pages):
        yield page
        following = next_link(page.headers.get("link", ""))
        if following is None:
            return
        page = client.get(following)
    raise PagingCapped(f"{path}: more than {max_pages} pages")


class PagingCapped(ApiError):
    """A collection longer than the paging limit: what was read is not the whole of it."""


def next_link(header: str) -> str | None:
    return rel_link(header, "next")


def rel_link(header: str, rel: str) -> str | None:
    """The target of `rel` in a `Link` header (`<url>; rel="next", <url>; rel="last"`)."""
    for part in header.split(","):
        target, _, rest = part.partition(";")
        if f'rel="{rel}"' in rest:
            return target.strip().strip("<>")
    return None
