"""Enqueueing after commit as a speed-up only: a broker outage never fails the write it follows.

The change itself is already recorded in PostgreSQL (a dirty document, a tombstone); if the task
cannot be sent, the reconciler picks the change up once the broker is back.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from django.db import transaction

logger = logging.getLogger(__name__)


def send_task(task: Any, *args: Any) -> bool:
    """Send now; False (logged) when the broker cannot take it."""
    try:
        task.apply_async(args=args, retry=False)
    except Exception as exc:  # any broker failure: the reconciler covers for the lost message
        logger.warning(
            "could not enqueue %s (%s); the reconciler will do it", getattr(task, "name", task), exc
        )
        return False
    return True


def send_after_commit(task: Any, *args: Any) -> None:
    """Send once the current transaction commits (never if it rolls back)."""
    transaction.on_commit(lambda: send_task(task, *args), robust=True)


def schedule_index_sync(document_ids: Sequence[int]) -> None:
    """After commit, push these documents to the retrieval backend (nothing to do for PostgreSQL)."""
    from knowledge.tasks import sync_documents_to_index
    from retrieval_backends.registry import get_backend

    ids = sorted(set(document_ids))
    if ids and get_backend().requires_index_sync:
        send_after_commit(sync_documents_to_index, ids)
