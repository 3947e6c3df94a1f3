"""Pushes what the retrieval backend's index is missing, in the foreground: the reconciler's loop."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from knowledge.models import Document
from knowledge.services.index_sync import index_reconcile, index_status
from knowledge.services.index_sync.rebuild import index_rebuild
from knowledge.services.index_sync.reconcile import documents_mark_dirty
from retrieval_backends.base import BackendError, BackendUnavailable
from retrieval_backends.registry import get_backend


class Command(BaseCommand):
    help = (
        "Push every dirty document and deletion to the retrieval backend (what the Celery reconciler "
        "does every few seconds). --status reports and exits 1 when anything is pending."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--status", action="store_true", help="report the backlog; exit 1 when pending")
        parser.add_argument(
            "--all", action="store_true", help="push every document again, not only dirty ones"
        )
        parser.add_argument(
            "--rebuild",
            action="store_true",
            help="build a fresh index from PostgreSQL and swap it in (blue/green)",
        )
        parser.add_argument("--batch-size", type=int, default=200)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["status"]:
            self._status()
            return
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        if options["rebuild"]:
            self._rebuild(options["batch_size"])
            return
        if options["all"]:
            self.stdout.write(f"marked {documents_mark_dirty()} documents to push again")
        status = index_status()
        with tqdm(total=status.dirty + status.tombstones, unit="doc", desc="index sync", disable=None) as bar:
            try:
                stats = index_reconcile(
                    batch_size=options["batch_size"], time_budget=None, on_progress=bar.update
                )
            except BackendUnavailable as exc:
                raise CommandError(f"the {get_backend().name} backend is unavailable: {exc}") from None
        if not stats.ran:
            raise CommandError("another reconciler is running (a worker's beat task); try again in a moment")
        self.stdout.write(
            f"pushed {stats.pushed} documents, deleted {stats.deleted}, {stats.failed} failed, in "
            f"{stats.seconds:.1f} s ({stats.per_second:.0f}/s)"
        )
        self._status()

    def _rebuild(self, batch_size: int) -> None:
        total = Document.objects.count()
        with tqdm(total=total, unit="doc", desc="rebuild", disable=None) as bar:
            try:
                stats = index_rebuild(batch_size=batch_size, on_progress=bar.update)
            except (BackendError, BackendUnavailable) as exc:
                raise CommandError(f"rebuild failed, the serving index is untouched: {exc}") from None
        self.stdout.write(stats.message)
        index_reconcile(time_budget=None)  # what changed while the rebuild read PostgreSQL

    def _status(self) -> None:
        status = index_status()
        age = status.oldest_age_seconds
        self.stdout.write(
            f"backend {get_backend().name}: {status.dirty} dirty documents ({status.failing} failing), "
            f"{status.tombstones} tombstones, oldest pending "
            + ("none" if age is None else f"{age:.0f} s ago")
        )
        if status.pending:
            sys.exit(1)
