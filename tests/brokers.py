"""A private, real Redis server for tests that stop and restart the broker (the shared one stays up)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import redis

from config.celery import app


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class PrivateRedis:
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.process = subprocess.Popen(
            [binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port)
        for _ in range(100):
            try:
                if client.ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("the private redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def queued(self, queue: str = "priority") -> int:
        length: Any = redis.Redis(port=self.port).llen(queue)
        return int(length)


@contextmanager
def broker_at(url: str) -> Iterator[None]:
    """Point the Celery app's producers and its result store at another Redis for the duration (one
    Redis serves both in a deployment, so an outage takes both away)."""
    saved = app.conf.broker_url, app.conf.result_backend
    _switch(url, url)
    try:
        yield
    finally:
        _switch(*saved)


def _switch(url: str, results: str) -> None:
    celery: Any = app
    celery.conf.broker_url = url
    celery.conf.result_backend = results
    # The result store is built once from result_backend, cached on the app or per thread: forget it.
    celery._backend_cache = None
    celery._local.__dict__.pop("backend", None)
    # Producers are pooled per connection, built lazily from broker_url: forget the old ones.
    celery._pool = None
    celery.amqp._producer_pool = None
