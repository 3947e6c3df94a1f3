"""The audit log's writes: one row per search and per admin change of access, retention, and the
buffered writer that keeps them off the search's path.

Searches are buffered in the process as plain tuples and written by a background thread, one batch
per transaction in COPYs of 25 entries (every second, or at once when 500 wait), so a search pays for
a list append, not an INSERT.
What can be lost: the entries of the last second if the process is killed without exiting (an
orderly exit flushes), and, while PostgreSQL is down for long, whatever exceeds 10,000 waiting
entries (counted and logged). With KNOWLEDGE_AUDIT_WRITES=inline each entry is written in the request
instead (no loss, a few hundred microseconds per search). Admin changes of access are always
written in their own request.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection, transaction
from django.utils import timezone

from knowledge.access.principals import document_acl_tokens
from knowledge.models import AccessAudit, Document, SearchAudit
from knowledge.store.audit import SearchEntry, search_entries_copy

logger = logging.getLogger(__name__)
FLUSH_SECONDS = 1.0
BATCH = 500
SLICE = 25
MAX_PENDING = 10_000


def query_hash(text: str | None) -> str:
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()


def search_record(
    *,
    tenant_id: int,
    actor: str,
    principal: str,
    query: str | None,
    filters: dict[str, Any],
    document_ids: Iterable[int],
    api_key_id: int | None = None,
    staff_user: str = "",
) -> None:
    """Record a search's answer: the documents in the order of their first hit."""
    if not settings.KNOWLEDGE_AUDIT:
        return
    entry = SearchEntry(
        created_at=timezone.now(),
        tenant_id=tenant_id,
        api_key_id=api_key_id,
        staff_user=staff_user,
        actor=actor,
        principal=principal,
        query_hash=query_hash(query),
        query_text=(query or "") if settings.KNOWLEDGE_AUDIT_QUERY_TEXT else "",
        filters=filters,
        document_ids=list(dict.fromkeys(document_ids)),
    )
    if settings.KNOWLEDGE_AUDIT_WRITES == "inline":
        search_entries_copy([entry])
    else:
        WRITER.add(entry)


def access_snapshot(document: Document) -> dict[str, Any]:
    """Who may see the document now, as the audit keeps it."""
    principals = list(document.allowed_principals.all())
    return {
        "public": document.is_public,
        "users": sorted(p.external_id for p in principals if p.kind == "user"),
        "groups": sorted(p.external_id for p in principals if p.kind == "group"),
        "deleted": document.deleted_at is not None,
        "tokens": document_acl_tokens(document=document),
    }


def _change(before: dict[str, Any], after: dict[str, Any]) -> str:
    def audience(state: dict[str, Any]) -> set[str]:
        return set() if state["deleted"] else set(state["tokens"])

    old, new = audience(before), audience(after)
    widened, narrowed = bool(new - old), bool(old - new)
    if widened and narrowed:
        return AccessAudit.Change.BOTH
    return AccessAudit.Change.WIDENED if widened else AccessAudit.Change.NARROWED if narrowed else "none"


def access_change_record(
    *, user: str, document: Document, action: str, before: dict[str, Any]
) -> AccessAudit:
    """Record an admin's change of a document's access (`before` from access_snapshot, taken first)."""
    document.refresh_from_db()
    after = access_snapshot(document)
    return AccessAudit.objects.create(
        tenant_id=document.tenant_id,
        document=document,
        document_label=f"{document.connector_id}:{document.external_id}"[:600],
        user=user,
        action=action,
        change=_change(before, after),
        before=before,
        after=after,
    )


def audit_purge(*, older_than_days: int | None = None) -> int:
    """Delete audit entries older than the retention (KNOWLEDGE_AUDIT_RETENTION_DAYS; 0 keeps all)."""
    days = settings.KNOWLEDGE_AUDIT_RETENTION_DAYS if older_than_days is None else older_than_days
    if days <= 0:
        return 0
    cutoff = timezone.now() - timedelta(days=days)
    searches, _ = SearchAudit.objects.filter(created_at__lt=cutoff).delete()
    changes, _ = AccessAudit.objects.filter(created_at__lt=cutoff).delete()
    return searches + changes


class AuditWriter:
    """A bounded in-process buffer of search entries, written in batches by one daemon thread."""

    def __init__(self) -> None:
        self._pending: list[SearchEntry] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.dropped = 0
        self.idle = threading.Event()  # set once the thread found nothing to write and let go of the database

    def add(self, entry: SearchEntry) -> None:
        with self._lock:
            if len(self._pending) >= MAX_PENDING:
                self.dropped += 1
                if self.dropped in (1, 10, 100) or self.dropped % 1000 == 0:
                    logger.error(
                        "audit: %d search entries dropped (the database is not taking them)", self.dropped
                    )
                return
            self._pending.append(entry)
            full = len(self._pending) >= BATCH
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="audit-writer", daemon=True)
                self._thread.start()
        if full:
            self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait(FLUSH_SECONDS)
            self._wake.clear()
            close_old_connections()  # this thread's own connection, replaced when broken
            if self.flush() == 0 and not self.pending():
                connection.close()  # idle: hold no connection (a restart or a dropped database needs none)
                self.idle.set()
            else:
                self.idle.clear()

    def flush(self) -> int:
        """Write what waits (in this thread's connection); on a database error keep it for the next try."""
        with self._lock:
            batch, self._pending = self._pending, []
        if not batch:
            return 0
        try:
            # In slices, yielding between them: the rows are built in Python, holding the interpreter
            # lock, and a search thread of this process waiting for it would wait out the switch interval.
            with transaction.atomic():
                for start in range(0, len(batch), SLICE):
                    search_entries_copy(batch[start : start + SLICE])
                    time.sleep(0)
        except DatabaseError as exc:
            logger.warning("audit: %d search entries wait for the database: %s", len(batch), exc)
            with self._lock:
                room = max(0, MAX_PENDING - len(self._pending))
                self.dropped += max(0, len(batch) - room)
                self._pending[:0] = batch[:room]
            return 0
        return len(batch)

    def pending(self) -> Sequence[SearchEntry]:
        with self._lock:
            return list(self._pending)


WRITER = AuditWriter()
atexit.register(WRITER.flush)
