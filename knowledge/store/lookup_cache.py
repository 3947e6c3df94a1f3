"""A per-process cache of the small look-ups every search makes (languages, statistics, vector models).

Answers are kept for `ttl` seconds. A write through this process clears the cache at once and again
when its transaction commits (so a search that ran in between cannot keep the old answer); a write
in another process is seen within `ttl`. Only answers whose staleness is harmless are kept long: a
look-up may say which answers to keep (`keep`), so a "nothing there" answer, which would hide
results that have just been written, is asked again on the next search instead.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from django.db import transaction

T = TypeVar("T")
DEFAULT_TTL_SECONDS = 5.0


class LookupCache:
    """Thread-safe TTL memo of look-up answers, cleared on local writes."""

    _live: weakref.WeakSet[LookupCache] = weakref.WeakSet()

    def __init__(self, ttl: float = DEFAULT_TTL_SECONDS) -> None:
        self.ttl = ttl
        self._lock = threading.Lock()
        self._entries: dict[Hashable, tuple[float, Any]] = {}
        self._generation = 0
        LookupCache._live.add(self)

    @classmethod
    def written_everywhere(cls) -> None:
        """`written()` on every cache of this process."""
        for cache in list(cls._live):
            cache.written()

    def get(self, key: Hashable, compute: Callable[[], T], keep: Callable[[T], bool] = bool) -> T:
        """The cached answer for `key`, or `compute()` (kept only when `keep(answer)`)."""
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and now - entry[0] < self.ttl:
                return entry[1]  # type: ignore[no-any-return]
            generation = self._generation
        value = compute()
        if keep(value):
            with self._lock:
                if generation == self._generation:  # no write cleared the cache while computing
                    self._entries[key] = (now, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._generation += 1

    def written(self) -> None:
        """Something these answers depend on was written: forget now, and again at commit."""
        self.clear()
        transaction.on_commit(self.clear)
