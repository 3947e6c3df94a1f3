"""Shared base of embedders that call an HTTP embedding service: JSON POST, retries, batching, checks."""

from __future__ import annotations

import http.client
import json
import math
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypedDict, TypeVar, Unpack

from django.core.exceptions import ImproperlyConfigured

from knowledge.pipeline.embedders.base import Embedder, EmbedderError

RETRYABLE_STATUS = frozenset({408, 429})  # and every 5xx
MAX_RETRY_AFTER = 60.0  # seconds; a longer Retry-After is cut to this
USER_AGENT = "knowledge-retrieval-embedder/1"
DEFAULT_BATCH = 64
DEFAULT_TIMEOUT = 30.0
MAX_RETRIES = 3

T = TypeVar("T")


class TransportOptions(TypedDict, total=False):
    """Options shared by the HTTP embedders; each has a default."""

    batch_size: int
    timeout: float
    max_retries: int
    backoff_base: float
    backoff_max: float


def option(value: T | None, default: T) -> T:
    """An explicit constructor argument, else the default (settings reach a plugin as its options)."""
    return default if value is None else value


def endpoint(url: str, label: str) -> str:
    """`url` checked to be http(s)."""
    if not url.startswith(("http://", "https://")):
        raise ImproperlyConfigured(f"{label} embedder: the URL must be http:// or https://, got {url!r}")
    return url


class _Transient(Exception):
    """One attempt failed in a way a later attempt may not."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # urllib would replay a redirected POST as a bodiless GET; a 3xx is reported as an error instead.
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def server_message(body: bytes) -> str:
    """The error text of an OpenAI-style (`{"error": {"message"}}`) or Ollama-style (`{"error"}`) body."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        payload = json.loads(text)
    except ValueError:
        return text[:500]
    error = payload.get("error", payload) if isinstance(payload, dict) else payload
    if isinstance(error, dict):
        error = error.get("message") or error.get("detail") or error
    return str(error)[:500]


def _retry_after(headers: Any) -> float | None:
    try:
        seconds = float(headers.get("Retry-After", ""))
    except (TypeError, ValueError):
        return None  # absent, or an HTTP date: fall back to our own backoff
    return min(max(seconds, 0.0), MAX_RETRY_AFTER) if math.isfinite(seconds) else None


class JsonHttpClient:
    """POSTs JSON and returns the decoded reply, retrying 408/429/5xx, timeouts and connection errors.

    Retries back off exponentially (`backoff_base * 2**attempt`, capped at `backoff_max`) with jitter,
    or wait as long as the server's Retry-After asks. Other 4xx raise a permanent EmbedderError.
    """

    def __init__(
        self,
        *,
        label: str,
        headers: dict[str, str],
        timeout: float,
        max_retries: int,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if timeout <= 0 or max_retries < 0:
            raise ImproperlyConfigured(f"{label} embedder: need timeout > 0 and max_retries >= 0")
        self.label = label
        self.headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, **headers}
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._sleep = sleep
        self._opener = urllib.request.build_opener(_NoRedirect)

    def post(self, url: str, payload: dict[str, Any]) -> Any:
        body = json.dumps(payload).encode("utf-8")
        for attempt in range(self.max_retries + 1):
            try:
                return self._post_once(url, body)
            except _Transient as exc:
                if attempt == self.max_retries:
                    raise EmbedderError(
                        f"{self.label}: {url} failed after {attempt + 1} attempts: {exc}", permanent=False
                    ) from exc
                self._sleep(self._delay(attempt, exc.retry_after))
        raise AssertionError("unreachable")

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        ceiling = min(self.backoff_max, self.backoff_base * 2**attempt)
        jittered = ceiling / 2 + random.uniform(0, ceiling / 2)
        return max(jittered, retry_after or 0.0)

    def _post_once(self, url: str, body: bytes) -> Any:
        request = urllib.request.Request(url, data=body, headers=self.headers, method="POST")
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raise self._status_error(url, exc) from exc
        except (OSError, http.client.HTTPException) as exc:  # URLError, timeouts, resets, truncated replies
            raise _Transient(f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}") from exc
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise EmbedderError(f"{self.label}: {url} returned invalid JSON: {exc}", permanent=True) from exc

    def _status_error(self, url: str, exc: urllib.error.HTTPError) -> Exception:
        try:
            message = server_message(exc.read())
        except (OSError, http.client.HTTPException):
            message = ""
        text = f"HTTP {exc.code}: {message or exc.reason}"
        if exc.code in RETRYABLE_STATUS or exc.code >= 500:
            return _Transient(text, _retry_after(exc.headers))
        return EmbedderError(f"{self.label}: {url} refused the request: {text}", permanent=True)


def l2_normalise(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector]


class HttpEmbedder(Embedder):
    """Splits input into batches, sends each with `_request`, checks and L2-normalises the vectors."""

    label = "http"

    def __init__(
        self,
        *,
        url: str,
        model: str,
        dimension: int,
        headers: dict[str, str],
        **options: Unpack[TransportOptions],
    ) -> None:
        self.url = endpoint(url, self.label)
        self.model = model
        self.dimension = dimension
        self.name = f"{self.label}:{model}@{dimension}"
        self.batch_size = option(options.get("batch_size"), DEFAULT_BATCH)
        if not model or dimension <= 0 or self.batch_size <= 0:
            raise ImproperlyConfigured(
                f"{self.label} embedder: need a model name and a positive dimension and batch size, "
                f"got {model!r}, {dimension!r}, {self.batch_size!r}"
            )
        self.client = JsonHttpClient(
            label=self.label,
            headers=headers,
            timeout=option(options.get("timeout"), DEFAULT_TIMEOUT),
            max_retries=option(options.get("max_retries"), MAX_RETRIES),
            backoff_base=options.get("backoff_base", 0.5),
            backoff_max=options.get("backoff_max", 8.0),
        )

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            vectors.extend(self._checked(self._request(batch), len(batch)))
        return vectors

    def _request(self, texts: list[str]) -> list[Any]:
        """One call to the service: the raw vectors, in input order."""
        raise NotImplementedError("HTTP embedders must implement _request()")

    def _checked(self, vectors: list[Any], expected: int) -> list[list[float]]:
        if len(vectors) != expected:
            self._fail(f"returned {len(vectors)} embeddings for {expected} inputs")
        return [self._checked_vector(v) for v in vectors]

    def _checked_vector(self, vector: Any) -> list[float]:
        if not isinstance(vector, list) or len(vector) != self.dimension:
            size = len(vector) if isinstance(vector, list) else type(vector).__name__
            self._fail(f"returned a vector of {size} values, expected {self.dimension}")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in vector):
            self._fail("returned a vector with non-numeric values")
        floats = [float(v) for v in vector]
        if not all(math.isfinite(v) for v in floats) or not any(floats):
            self._fail("returned a zero or non-finite vector")
        return l2_normalise(floats)

    def _fail(self, problem: str) -> NoReturn:
        # A malformed reply repeats on retry (wrong model or dimension configured): not worth retrying.
        raise EmbedderError(f"{self.name}: the server {problem}", permanent=True)
