"""Who may write the index: pushes share a lock, a rebuild holds it alone (PostgreSQL advisory locks).

While a rebuild fills a new index generation, pushes to the serving one would be lost at the swap,
so they wait: the changes stay recorded as dirty documents and tombstones, and the reconciler pushes
them into the new generation once it serves.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from knowledge.store.advisory import try_lock, unlock
from retrieval_backends.base import BackendUnavailable

INDEX_WRITES = 0x6B62_1D5D


class IndexRebuilding(BackendUnavailable):
    """A rebuild holds the index: try the push again later (nothing is lost meanwhile)."""


@contextmanager
def index_push() -> Iterator[None]:
    """Hold the shared write lock for one push; IndexRebuilding when a rebuild runs."""
    if not try_lock(INDEX_WRITES, shared=True):
        raise IndexRebuilding("an index rebuild is running; the change is pushed when it is done")
    try:
        yield
    finally:
        unlock(INDEX_WRITES, shared=True)


@contextmanager
def index_exclusive(wait_seconds: float = 60.0) -> Iterator[bool]:
    """Hold the write lock alone (waiting for running pushes to finish); False if it never came."""
    deadline, held = time.monotonic() + wait_seconds, False
    while not (held := try_lock(INDEX_WRITES)) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        yield held
    finally:
        if held:
            unlock(INDEX_WRITES)
