"""Index sync: the change log lives in PostgreSQL; pushes, the reconciler and the status read it."""

from knowledge.services.index_sync.push import (
    PushOutcome,
    documents_index_sync,
    documents_push,
    tombstones_push,
)
from knowledge.services.index_sync.reconcile import IndexStatus, ReconcileStats, index_reconcile, index_status

__all__ = [
    "IndexStatus",
    "PushOutcome",
    "ReconcileStats",
    "documents_index_sync",
    "documents_push",
    "index_reconcile",
    "index_status",
    "tombstones_push",
]
