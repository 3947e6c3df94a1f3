"""Enqueueing after commit as a speed-up only: a broker outage never fails the write it follows.

Tasks are sent by name (the app's registry finds them), so no service imports `knowledge.tasks`,
which imports the services. The change itself is already recorded in PostgreSQL (a dirty document,
a tombstone); if the task cannot be sent, the reconciler picks the change up once the broker is back.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from django.db import transaction

from config.celery import app
from retrieval_backends.base import is_external
from retrieval_backends.registry import get_backend

logger = logging.getLogger(__name__)

SYNC_DOCUMENTS = "knowledge.tasks.sync_documents_to_index"
SYNC_CONNECTOR = "knowledge.tasks.sync_connector"
PURGE_CONNECTOR = "knowledge.tasks.purge_connector"


def registered_task(name: str) -> Any:
    """The task registered under `name`. A process that is not a worker (gunicorn, a command) has
    not imported the apps' task modules yet: Celery's autodiscovery is lazy, so run it first."""
    if name not in app.tasks:
        app.loader.import_default_modules()
    return app.tasks[name]


def send_task(name: str, *args: Any) -> bool:
    """Send the task registered under `name` now; False (logged) when the broker cannot take it."""
    try:
        registered_task(name).apply_async(args=args, retry=False)
    except Exception as exc:  # any broker failure: the reconciler covers for the lost message
        logger.warning("could not enqueue %s (%s); the reconciler will do it", name, exc)
        return False
    return True


def send_after_commit(name: str, *args: Any) -> None:
    """Send once the current transaction commits (never if it rolls back)."""
    transaction.on_commit(lambda: send_task(name, *args), robust=True)


def schedule_index_sync(document_ids: Sequence[int]) -> None:
    """After commit, push these documents to the retrieval backend (nothing to do for PostgreSQL)."""
    ids = sorted(set(document_ids))
    if ids and is_external(get_backend()):
        send_after_commit(SYNC_DOCUMENTS, ids)
