"""Loads the active embedder once, before the first search (the local one builds its query copy here)."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand

from knowledge.pipeline.active import active_embedder


class Command(BaseCommand):
    help = "Prepare the active embedder: the local one builds its quantized query model (once per machine)."

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        embedder = active_embedder()
        embedder.prepare()
        self.stdout.write(f"embedder {embedder.name} ready ({time.monotonic() - started:.1f} s)")
