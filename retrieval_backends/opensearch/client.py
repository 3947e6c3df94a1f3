"""The OpenSearch client: URL, auth, TLS, timeouts and network retries live here, nowhere else."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import ConnectionTimeout, TransportError

from retrieval_backends.base import BackendUnavailable

T = TypeVar("T")
# HTTP statuses that mean "try again later" (overload, node restarting, a gateway in between).
TRANSIENT_STATUSES = {429, 502, 503, 504}


@dataclass(frozen=True)
class ClientOptions:
    url: str
    username: str = ""
    password: str = ""
    ca_certs: str | None = None
    verify_certs: bool = True
    timeout_ms: int = 10000
    # Connections kept open to the node: the lanes, planned queries and server threads search at
    # once; urllib3's default of one discards a connection per concurrent search.
    pool_maxsize: int = 32
    # gzip of request bodies: worth it over a slow link; on a LAN it only costs CPU (a bulk push of
    # 20,000 chunks spent 24 of its 55 s compressing at gzip's level 9).
    http_compress: bool = False


def build_client(options: ClientOptions) -> OpenSearch:
    """A client for the cluster; writes retry on connection errors and 429/5xx, searches do not."""
    kwargs: dict[str, Any] = {
        "hosts": [options.url],
        "timeout": options.timeout_ms / 1000,
        "max_retries": 2,
        "retry_on_timeout": False,
        "retry_on_status": (502, 503, 504),
        "http_compress": options.http_compress,
        "pool_maxsize": options.pool_maxsize,
    }
    if options.username:
        kwargs["http_auth"] = (options.username, options.password)
    if options.url.startswith("https://"):
        kwargs.update(use_ssl=True, verify_certs=options.verify_certs, ssl_show_warn=options.verify_certs)
        if options.ca_certs:
            kwargs["ca_certs"] = options.ca_certs
    return OpenSearch(**kwargs)


def is_transient(error: BaseException) -> bool:
    if isinstance(error, OSConnectionError):  # ConnectionTimeout included
        return True
    return isinstance(error, TransportError) and error.status_code in TRANSIENT_STATUSES


def call(operation: Callable[[], T], what: str) -> T:
    """Run a client call, turning unreachable-cluster failures into BackendUnavailable."""
    try:
        return operation()
    except (OSConnectionError, TransportError) as exc:
        if is_transient(exc):
            raise BackendUnavailable(f"OpenSearch {what}: {exc}") from exc
        raise


def is_timeout(error: BaseException) -> bool:
    """ConnectionTimeout (a ConnectionError: test it first) or an HTTP 504."""
    if isinstance(error, ConnectionTimeout):
        return True
    return isinstance(error, TransportError) and error.status_code == 504
