"""The thread pools searches share: one for lanes (each thread keeps its own database connection, so
a search's lanes run concurrently without opening connections), one for planned queries (each of
which submits its lanes to the first, so they never wait on a pool they occupy)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from typing import Any, TypeVar

from django.db import connection

T = TypeVar("T")
LANE_THREADS = 4
QUERY_THREADS = 4
CONNECTION_CHECK_SECONDS = 1.0
_thread = threading.local()


class SearchExecutor:
    def __init__(self, lane_threads: int = LANE_THREADS, query_threads: int = QUERY_THREADS) -> None:
        self.lane_threads = lane_threads
        self.lanes = ThreadPoolExecutor(max_workers=lane_threads, thread_name_prefix="search-lane")
        self.queries = ThreadPoolExecutor(max_workers=query_threads, thread_name_prefix="search-query")

    def lane(self, fn: Callable[[], T]) -> Future[T]:
        return self.lanes.submit(in_pool_thread, fn)

    def query(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        return self.queries.submit(in_pool_thread, lambda: fn(*args))

    def close_connections(self) -> None:
        """Close the database connection each lane thread keeps (before dropping a database, at
        shutdown): every thread takes exactly one of the calls, held at a barrier."""
        barrier = threading.Barrier(self.lane_threads, timeout=10)

        def close() -> None:
            barrier.wait()
            connection.close()

        for future in [self.lanes.submit(close) for _ in range(self.lane_threads)]:
            future.result()


def in_pool_thread(fn: Callable[[], T]) -> T:
    """Run fn in a pool thread. Pool threads get no request signals, so they retire old or broken
    connections themselves; the check costs a round trip (CONN_HEALTH_CHECKS), so at most once a
    second unless a query failed."""
    now = time.monotonic()
    if connection.errors_occurred or now - getattr(_thread, "checked", 0.0) > CONNECTION_CHECK_SECONDS:
        connection.close_if_unusable_or_obsolete()
        _thread.checked = now
    return fn()


@lru_cache(maxsize=1)
def search_executor() -> SearchExecutor:
    """The process's executor, made on first use."""
    return SearchExecutor()


def close_search_connections() -> None:
    """Close the lane threads' connections, if any pool was ever made."""
    if search_executor.cache_info().currsize:
        search_executor().close_connections()
