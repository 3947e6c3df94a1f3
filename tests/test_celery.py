"""A real Celery worker processes a task through the real Redis broker."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery.result import AsyncResult

from config.celery import app
from knowledge.tasks import ping

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def worker() -> Iterator[subprocess.Popen[bytes]]:
    queue = f"test-{os.getpid()}"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool=solo",
            "-Q",
            queue,
            "--loglevel=WARNING",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    process.queue = queue  # type: ignore[attr-defined]
    try:
        yield process
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.celery_worker
def test_task_runs_on_a_real_worker(worker: subprocess.Popen[bytes]) -> None:
    result: AsyncResult = ping.apply_async(queue=worker.queue)  # type: ignore[attr-defined]
    assert result.get(timeout=60) == "pong"
    assert result.successful()


def test_celery_configuration_follows_the_recipe() -> None:
    assert app.conf.task_acks_late is True
    assert app.conf.worker_prefetch_multiplier == 1
    assert app.conf.broker_url.startswith("redis://")
    assert app.conf.task_time_limit and app.conf.task_soft_time_limit
    assert "knowledge.tasks.ping" in app.tasks
    deadline = time.monotonic() + 5
    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1)
        assert conn.connected and time.monotonic() < deadline


def test_a_process_that_never_imported_the_tasks_still_sends_them_by_name() -> None:
    """Celery's autodiscovery is lazy: a web process has not imported `knowledge.tasks` when its first
    write enqueues. Sending by name must find the task anyway (it once fell through to "could not
    enqueue", leaving every push to the reconciler)."""
    script = (
        "import django; django.setup()\n"
        "from config.celery import app\n"
        "from knowledge.services import enqueue\n"
        "assert enqueue.SYNC_CONNECTOR not in app.tasks, 'the tasks were imported already'\n"
        "app.conf.task_always_eager = True\n"
        "assert enqueue.registered_task('knowledge.tasks.ping').apply_async().get() == 'pong'\n"
        "assert enqueue.registered_task(enqueue.SYNC_CONNECTOR).name == enqueue.SYNC_CONNECTOR\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
