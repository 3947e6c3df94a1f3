"""The real OpenSearch backend with faults on command, shared by every process through Redis.

Keys (in the Redis at FAULTY_REDIS_URL): `fault` = `before` (raise before writing the index),
`after` (raise after writing it, before the push is marked clean) or `hang` (sleep inside the push,
so a test can SIGKILL the worker). `pushes` is a hash counting pushes per document id; `attempts`
counts push attempts (faulty ones included).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import redis

from retrieval_backends.opensearch import OpenSearchRetrievalBackend
from retrieval_backends.types import DocumentState


class InjectedFault(RuntimeError):
    """A fault the test asked for (not a transient error: the task is not retried)."""


def faults() -> redis.Redis:
    return redis.Redis.from_url(os.environ["FAULTY_REDIS_URL"])


class FaultyOpenSearchBackend(OpenSearchRetrievalBackend):
    def __init__(self, **options: Any) -> None:
        options.setdefault("index_prefix", os.environ["FAULTY_INDEX_PREFIX"])
        options.setdefault("url", os.environ.get("OPENSEARCH_URL", "http://127.0.0.1:9200"))
        super().__init__(**options)

    def sync_document_access(
        self, states: Sequence[DocumentState], generation: int | None = None
    ) -> dict[int, str]:
        control = faults()
        control.incr("attempts")
        raw: Any = control.get("fault")
        fault = (raw or b"").decode()
        if fault == "before":
            raise InjectedFault("after the commit, before the index write")
        if fault == "hang":
            control.set("hanging", "1")
            time.sleep(120)
        failures = super().sync_document_access(states, generation)
        for state in states:
            if state.document_id not in failures:
                control.hincrby("pushes", str(state.document_id), 1)
        if fault == "after":
            raise InjectedFault("after the index write, before marking clean")
        return failures
