"""Syncs a filesystem or web connector: ingest what the source has, soft-delete what it no longer has.

A sync is claimed with a compare-and-set on the connector's status, so two workers never sync the
same connector at once; a claim older than the task time limit is considered abandoned. Documents the
source no longer lists are soft-deleted (restorable), never dropped, and a source that yields nothing
at all (an unmounted folder, a network failure) deletes nothing.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from knowledge.connectors import files, web
from knowledge.models import Connector
from knowledge.services.documents import document_soft_delete
from knowledge.services.ingestion import IngestStats, SourceDocument, documents_ingest


@dataclass(frozen=True)
class SyncOutcome:
    claimed: bool
    stats: IngestStats | None = None
    deleted: int = 0
    errors: tuple[str, ...] = ()


def _sources(connector: Connector, errors: list[str]) -> Iterable[SourceDocument]:
    config = connector.config
    if connector.kind == Connector.Kind.FILESYSTEM:
        root = Path(config["path"])
        if not root.is_dir():
            errors.append(f"{root} is not a readable directory")
            return []
        patterns = config.get("patterns") or ["**/*.md", "**/*.txt", "**/*.html"]
        return [
            d
            for d in files.iter_files([root])
            if any(
                fnmatch.fnmatch(d.external_id, p) or fnmatch.fnmatch(d.external_id, p.removeprefix("**/"))
                for p in patterns
            )
        ]
    if connector.kind == Connector.Kind.WEB:
        return list(web.iter_pages(config["urls"], errors))
    return []  # api connectors are pushed to, not pulled


def _claim(connector: Connector) -> bool:
    stale = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    claimable = ~Q(last_sync_status=Connector.SyncStatus.RUNNING) | Q(last_synced_at__lt=stale)
    return (
        Connector.objects.filter(claimable, pk=connector.pk, enabled=True).update(
            last_sync_status=Connector.SyncStatus.RUNNING, last_synced_at=timezone.now()
        )
        == 1
    )


def connector_sync(*, connector: Connector) -> SyncOutcome:
    """Pull the connector's source into the knowledge base; idempotent."""
    if connector.kind == Connector.Kind.API or not _claim(connector):
        return SyncOutcome(claimed=False)
    errors: list[str] = []
    try:
        sources = list(_sources(connector, errors))
        stats = documents_ingest(connector=connector, documents=sources)
        deleted = _delete_missing(connector, {s.external_id for s in sources}) if sources else 0
    except Exception as exc:
        _finish(connector, [*errors, f"{type(exc).__name__}: {exc}"])
        raise
    _finish(connector, errors)
    return SyncOutcome(claimed=True, stats=stats, deleted=deleted, errors=tuple(errors))


def _delete_missing(connector: Connector, seen: set[str]) -> int:
    gone = connector.documents.filter(deleted_at__isnull=True).exclude(external_id__in=seen)
    count = 0
    for document in gone:
        document_soft_delete(document=document)
        count += 1
    return count


def _finish(connector: Connector, errors: list[str]) -> None:
    Connector.objects.filter(pk=connector.pk).update(
        last_sync_status=Connector.SyncStatus.FAILED if errors else Connector.SyncStatus.OK,
        last_synced_at=timezone.now(),
        last_sync_error_count=len(errors),
        last_sync_error="\n".join(errors)[:10000],
    )


def connectors_due() -> list[int]:
    """Enabled pull connectors whose sync interval has passed (or that never synced)."""
    now = timezone.now()
    due = []
    for connector in Connector.objects.filter(enabled=True).exclude(kind=Connector.Kind.API):
        last = connector.last_synced_at
        if last is None or last + connector.sync_interval <= now:
            due.append(connector.pk)
    return due
