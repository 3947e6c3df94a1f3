"""Recomputes the BM25 keyword statistics from the chunks (after a bulk load that bypassed them)."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from knowledge.models import KeywordStatistics, Tenant
from knowledge.store.statistics import rebuild_keyword_statistics


class Command(BaseCommand):
    help = (
        "Rebuild the per-tenant, per-language BM25 statistics (chunk count, lengths, document frequencies)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", default=None, help="only this tenant (slug)")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant_id = None
        if options["tenant"]:
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"unknown tenant {options['tenant']!r}")
            tenant_id = tenant.pk
        started = time.monotonic()
        with transaction.atomic():
            rebuild_keyword_statistics(tenant_id=tenant_id)
            self.stdout.write("BM25 statistics rebuilt")
        rows = KeywordStatistics.objects.all()
        if tenant_id is not None:
            rows = rows.filter(tenant_id=tenant_id)
        for row in rows.order_by("tenant_id", "language"):
            self.stdout.write(
                f"tenant {row.tenant_id} / {row.language}: {row.chunk_count} chunks, "
                f"average length {row.average_length:.1f} lexemes"
            )
        self.stdout.write(f"rebuilt in {time.monotonic() - started:.1f} s")
