"""Rotates an API key's secret and prints the new key once; the old one works through the overlap."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from knowledge.errors import Conflict
from knowledge.models import ApiKey
from knowledge.services.api_keys import api_key_rotate


class Command(BaseCommand):
    help = "Give an API key a new secret (printed once); the old secret keeps working for --overlap-hours."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--key", required=True, help="the key's lookup id (kb_<lookup id>_...)")
        parser.add_argument("--overlap-hours", type=float, default=24.0, help="how long the old secret works")

    def handle(self, *args: Any, **options: Any) -> None:
        lookup = options["key"].removeprefix("kb_").split("_", 1)[0]
        key = ApiKey.objects.filter(lookup_id=lookup).first()
        if key is None:
            raise CommandError(f"no API key with lookup id {lookup!r}")
        if not 0 <= options["overlap_hours"] <= 24 * 90:
            raise CommandError("--overlap-hours must be between 0 and 2160 (90 days)")
        try:
            plain = api_key_rotate(key_id=key.pk, overlap=timedelta(hours=options["overlap_hours"]))
        except Conflict as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(plain)
