"""Lane reads on a streaming read replica, only when it has replayed the tenant's last access change.

A replica replays the primary's commits in order, some time after them. Serving a search from it is
safe for a tenant when every change that can hide one of the tenant's chunks (an ACL narrowed, a
document deleted, an environment changed) has been replayed: otherwise a revoked user could still
find the chunk there. Each such change raises the tenant's access version in its own transaction
(`TenantAccessMark`, a deferred trigger on the chunk table), so the rule is one comparison: read the
version on the primary when the lane starts, read it on the replica; the replica serves when its
version is at least the primary's. Its later statements see an even newer snapshot, so they include
every change the primary had committed when the lane started. Otherwise, or when the replica is
unreachable, the lane runs on the primary. Inside a transaction on the primary the lane stays there
(it must see that transaction's own writes).

The lane's statements go to the replica by making it this thread's default connection for the
duration: every store function uses `django.db.connection`.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from knowledge.models import TenantAccessMark

logger = logging.getLogger(__name__)
VERSION = f"SELECT coalesce(max(version), 0) FROM {TenantAccessMark._meta.db_table} WHERE tenant_id = %s"
ROUTES: Counter[str] = Counter()  # replica / stale / unreachable / in_transaction: for tests and doctor
_lock = threading.Lock()


def access_version(alias: str, tenant_id: int) -> int:
    """The tenant's access version as the database behind `alias` has it."""
    with connections[alias].cursor() as cursor:
        cursor.execute(VERSION, [tenant_id])
        return int(cursor.fetchone()[0])


def replica_lag_seconds(alias: str) -> float:
    """Seconds since the replica last replayed a commit (0 when it has replayed everything)."""
    with connections[alias].cursor() as cursor:
        cursor.execute(
            "SELECT CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0 "
            "ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp()) END"
        )
        return float(cursor.fetchone()[0] or 0)


def replica_failed(alias: str | None, error: BaseException) -> None:
    """A lane on the replica lost its connection: the caller runs it on the primary instead."""
    logger.warning("the read replica %r failed a lane (%s); searching the primary", alias, error)
    if alias is not None:
        connections[alias].close()
    _count("failed")


def _count(route: str) -> None:
    with _lock:
        ROUTES[route] += 1


@contextmanager
def reads_on_replica(alias: str | None, tenant_id: int) -> Iterator[bool]:
    """Inside the block this thread's store reads go to replica `alias` when it is current for the
    tenant (yields True), else they stay on the primary (yields False)."""
    primary = connections[DEFAULT_DB_ALIAS]
    if alias is None:
        yield False
        return
    if primary.in_atomic_block:
        _count("in_transaction")
        yield False
        return
    wanted = access_version(DEFAULT_DB_ALIAS, tenant_id)
    try:
        replayed = access_version(alias, tenant_id)
    except DatabaseError:
        logger.warning("the read replica %r is unreachable; searching the primary", alias, exc_info=True)
        connections[alias].close()
        _count("unreachable")
        yield False
        return
    if replayed < wanted:
        _count("stale")
        yield False
        return
    _count("replica")
    connections[DEFAULT_DB_ALIAS] = connections[alias]
    try:
        yield True
    finally:
        connections[DEFAULT_DB_ALIAS] = primary
