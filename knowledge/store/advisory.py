"""PostgreSQL advisory locks on the store's connection (the index writers' and the reconciler's keys)."""

from __future__ import annotations

from django.db import connection


def try_lock(key: int, *, shared: bool = False) -> bool:
    """Take the session-level lock `key` if free (never waits)."""
    function = "pg_try_advisory_lock_shared" if shared else "pg_try_advisory_lock"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s)", [key])
        return bool(cursor.fetchone()[0])


def unlock(key: int, *, shared: bool = False) -> None:
    function = "pg_advisory_unlock_shared" if shared else "pg_advisory_unlock"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s)", [key])


def repeatable_read() -> None:
    """Make the transaction just opened read one snapshot (call first inside `atomic()`)."""
    with connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
