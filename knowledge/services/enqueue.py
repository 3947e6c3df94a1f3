"""Enqueueing after commit as a speed-up only: a broker outage never fails the write it follows.

Tasks are sent by name (the app's registry finds them), so no service imports `knowledge.tasks`,
which imports the services. The change itself is already recorded in PostgreSQL (a dirty document,
a tombstone); if the task cannot be sent, the reconciler picks the change up once the broker is back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.db import transaction

from config.celery import app
from retrieval_backends.base import is_external
from retrieval_backends.registry import get_backend

logger = logging.getLogger(__name__)
Push = Callable[[list[int]], object]
_inline_push: ContextVar[Push | None] = ContextVar("inline_push", default=None)

SYNC_DOCUMENTS = "knowledge.tasks.sync_documents_to_index"
SYNC_CONNECTOR = "knowledge.tasks.sync_connector"
SYNC_PERMISSIONS = "knowledge.tasks.sync_connector_permissions"
PURGE_CONNECTOR = "knowledge.tasks.purge_connector"
RUN_INGEST_JOB = "knowledge.tasks.run_ingest_job"


def registered_task(name: str) -> Any:
    """The task registered under `name`. A process that is not a worker (gunicorn, a command) has
    not imported the apps' task modules yet: Celery's autodiscovery is lazy, so run it first."""
    if name not in app.tasks:
        app.loader.import_default_modules()
    return app.tasks[name]


def send_task(name: str, *args: Any, expires: float | None = None) -> bool:
    """Send the task registered under `name` now; False (logged) when the broker cannot take it.
    `expires` (seconds) drops the message if no worker took it by then (a later resend covers it)."""
    try:
        registered_task(name).apply_async(args=args, retry=False, expires=expires)
    except Exception as exc:  # any broker failure: the reconciler covers for the lost message
        logger.warning("could not enqueue %s (%s); the reconciler will do it", name, exc)
        return False
    return True


def send_after_commit(name: str, *args: Any) -> None:
    """Send once the current transaction commits (never if it rolls back)."""
    transaction.on_commit(lambda: send_task(name, *args), robust=True)


@contextmanager
def pushes_inline(push: Push) -> Iterator[None]:
    """Within, the index push of each committed write runs in this process right after its commit
    instead of as a task on the priority queue: bulk work (a job, a connector sync) pushes its own
    writes, so ACL changes and deletions never queue behind thousands of them."""
    token = _inline_push.set(push)
    try:
        yield
    finally:
        _inline_push.reset(token)


def schedule_index_sync(document_ids: Sequence[int]) -> None:
    """After commit, push these documents to the retrieval backend (nothing to do for PostgreSQL)."""
    ids = sorted(set(document_ids))
    if not ids or not is_external(get_backend()):
        return
    push = _inline_push.get()
    if push is None:
        send_after_commit(SYNC_DOCUMENTS, ids)
    else:  # a failed push stays dirty in PostgreSQL: the reconciler retries it
        transaction.on_commit(lambda: push(ids), robust=True)
