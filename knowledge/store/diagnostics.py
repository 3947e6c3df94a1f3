"""What the doctor and the health check ask the database: liveness, versions, canonical counts."""

from __future__ import annotations

from django.db import connection
from django.db.models import Count

from knowledge.models import Chunk

PGVECTOR_MINIMUM = (0, 7)
PGVECTOR_ITERATIVE_SCANS = (0, 8)
Finding = tuple[str, str, str, str]  # (OK/WARN/FAIL, subject, message, fix)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isascii() and part.isdigit())


def database_ping() -> None:
    """One round trip; raises the driver's error when PostgreSQL does not answer."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def server_version() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        (version,) = cursor.fetchone() or ("?",)
    return str(version)


def pgvector_version() -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    return None if row is None else str(row[0])


def pgvector_findings() -> list[Finding]:
    """pgvector's presence and version."""
    version = pgvector_version()
    if version is None:
        return [("FAIL", "pgvector", "the vector extension is not installed", "run `manage.py migrate`")]
    if _version(version) < PGVECTOR_MINIMUM:
        fix = "install pgvector 0.8+ and run `ALTER EXTENSION vector UPDATE`"
        return [("FAIL", "pgvector", f"version {version} is too old (0.7 or newer needed)", fix)]
    note = "" if _version(version) >= PGVECTOR_ITERATIVE_SCANS else "; 0.8+ adds iterative scans"
    return [("OK", "pgvector", f"version {version}{note}", "")]


def chunks_per_tenant() -> dict[int, int]:
    """tenant id -> chunks (soft-deleted ones too: an external index holds them, flagged)."""
    rows = Chunk.objects.values("tenant_id").annotate(n=Count("id"))
    return {row["tenant_id"]: row["n"] for row in rows}
