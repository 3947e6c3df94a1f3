"""Show each tenant's vector count and the state of its own HNSW index; build or drop what is due."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from knowledge.selectors.vector_indexes import vector_index_states
from knowledge.services.vector_indexes import serving_threshold, vector_indexes_maintain
from knowledge.store.vector_indexes import VectorSpace


class Command(BaseCommand):
    help = (
        "List tenants' vectors per dimension and storage with the state of their own HNSW index "
        "(a tenant past KNOWLEDGE_TENANT_INDEX_MIN_VECTORS gets one); --apply builds the missing ones "
        "and drops those no longer needed now, as the bulk worker's periodic task does."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--apply", action="store_true", help="build and drop now (concurrently)")
        parser.add_argument(
            "--min-vectors", type=int, default=None, help="threshold (default: the serving backend's)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        threshold = options["min_vectors"] if options["min_vectors"] is not None else serving_threshold()
        if threshold is None:
            raise CommandError(
                "the serving backend does not search PostgreSQL's vectors; give --min-vectors to "
                "manage the per-tenant indexes anyway"
            )
        if threshold < 1:
            raise CommandError("--min-vectors must be at least 1")
        if options["apply"]:
            report = vector_indexes_maintain(min_vectors=threshold, on_build=self._building)
            if report.skipped:
                raise CommandError("another maintenance run holds the lock; try again when it ends")
            for name in report.dropped:
                self.stdout.write(f"dropped {name}")
            for name, error in report.failed.items():
                self.stderr.write(f"FAILED {name}: {error}")
            self.stdout.write(f"built {len(report.created)} in {report.seconds:.1f} s")
        self._table(threshold)

    def _building(self, space: VectorSpace, rows: int) -> None:
        self.stdout.write(f"building {space.index_name} over {rows} vectors ...")
        self.stdout.flush()

    def _table(self, threshold: int) -> None:
        self.stdout.write(f"threshold: more than {threshold} vectors")
        self.stdout.write(f"{'tenant':<24}{'dims':>6} {'storage':<8}{'vectors':>10}  {'index':<11}{'MB':>8}")
        for row in vector_index_states(min_vectors=threshold):
            self.stdout.write(
                f"{row.tenant[:23]:<24}{row.space.dimensions:>6} {row.space.storage:<8}{row.vectors:>10}  "
                f"{row.state:<11}{row.index_bytes / 2**20:>8.1f}"
            )
