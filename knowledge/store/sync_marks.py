"""The documents' index-sync bookkeeping: marked clean by compare-and-set on the version pushed, or
failed with an error and a growing retry delay."""

from __future__ import annotations

import json

from django.db import connection

from knowledge.store.tables import DOCUMENT

MARK_CLEAN = f"""
UPDATE {DOCUMENT} d
SET synced_version = v.version, sync_error = '', sync_attempts = 0, sync_retry_at = NULL,
    index_bumped_by = NULL  -- a later change, even in the same transaction, bumps again
FROM unnest(%s::bigint[], %s::bigint[]) AS v(id, version)
WHERE d.id = v.id AND d.synced_version < v.version
"""

MARK_FAILED = f"""
UPDATE {DOCUMENT} d
SET sync_error = f.error, sync_attempts = d.sync_attempts + 1,
    sync_retry_at = now() + make_interval(secs => least(%s, power(2, least(d.sync_attempts + 1, 20))))
FROM jsonb_each_text(%s::jsonb) AS f(id, error)
WHERE d.id = f.id::bigint
"""


def mark_clean(versions: dict[int, int]) -> int:
    """Record the versions pushed; a document changed since (a higher version) stays dirty."""
    if not versions:
        return 0
    ids = sorted(versions)
    with connection.cursor() as cursor:
        cursor.execute(MARK_CLEAN, [ids, [versions[i] for i in ids]])
        return cursor.rowcount


def mark_failed(failures: dict[int, str], *, max_retry_seconds: int, max_error_chars: int) -> None:
    """Record each document's error; its next try waits 2^attempts seconds, at most `max_retry_seconds`."""
    if failures:
        payload = json.dumps({str(k): v[:max_error_chars] for k, v in failures.items()})
        with connection.cursor() as cursor:
            cursor.execute(MARK_FAILED, [max_retry_seconds, payload])
