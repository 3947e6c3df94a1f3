"""Health of the service's dependencies, named but never described (details go to the log)."""

from __future__ import annotations

import logging

from knowledge.store.diagnostics import database_ping
from retrieval_backends.registry import get_backend

logger = logging.getLogger(__name__)


def dependency_health() -> dict[str, str]:
    """`ok` or `unavailable` for PostgreSQL and the retrieval backend."""
    checks = {"postgres": "ok", "backend": "ok"}
    try:
        database_ping()
    except Exception as exc:  # any failure means unhealthy; the reason is logged, not returned
        logger.warning("health: PostgreSQL check failed: %s", exc)
        checks["postgres"] = "unavailable"
        checks["backend"] = "unknown"
        return checks
    try:
        get_backend().health()
    except Exception as exc:  # BackendUnavailable or anything else the backend raised
        logger.warning("health: %s backend check failed: %s", get_backend().name, exc)
        checks["backend"] = "unavailable"
    return checks
