"""The audit log from the command line: `audit export` (JSON lines) and `audit purge` (retention)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from knowledge.selectors.audit import audit_entries
from knowledge.services.audit import audit_purge


def _moment(text: str, option: str) -> datetime:
    """An ISO date (its midnight, UTC) or date-time (UTC when it names no offset)."""
    try:
        moment = parse_datetime(text)
        day = None if moment is not None else parse_date(text)
    except ValueError:
        moment = day = None
    if moment is None and day is not None:
        moment = datetime.combine(day, time.min)
    if moment is None:
        raise CommandError(
            f"{option} must be an ISO date or date-time (2026-12-01 or 2026-12-01T08:00), got {text!r}"
        )
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, UTC)


class Command(BaseCommand):
    help = "Export the audit log as JSON lines, or purge entries past the retention."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        export = actions.add_parser("export", help="searches and access changes as JSON lines on stdout")
        export.add_argument("--since", required=True, help="ISO date or date-time (inclusive)")
        export.add_argument("--until", default=None, help="ISO date or date-time (exclusive)")
        export.add_argument("--tenant", default=None, help="only this tenant's entries (slug)")
        export.add_argument("--format", choices=["jsonl"], default="jsonl")
        purge = actions.add_parser("purge", help="delete entries older than the retention")
        purge.add_argument("--older-than-days", type=int, default=None, help="default: the setting")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "purge":
            days = options["older_than_days"]
            if days is not None and days < 1:
                raise CommandError("--older-than-days must be at least 1")
            self.stderr.write(f"{audit_purge(older_than_days=days)} audit entries deleted")
            return
        since = _moment(options["since"], "--since")
        until = _moment(options["until"], "--until") if options["until"] else None
        count = 0
        for entry in audit_entries(since=since, until=until, tenant=options["tenant"]):
            self.stdout.write(json.dumps(entry, sort_keys=True))
            count += 1
        self.stderr.write(f"{count} audit entries exported")
