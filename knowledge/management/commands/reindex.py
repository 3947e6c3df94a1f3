"""Blue/green re-embedding of every chunk with another embedder, then an atomic switch."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from knowledge.pipeline.active import active_embedder, active_spec, configured_spec, embedder_for
from knowledge.pipeline.embedders.base import Embedder
from knowledge.selectors.reindex import models_overlap
from knowledge.services.index_sync import index_reconcile
from knowledge.services.reindex import (
    chunks_missing,
    reindex_backfill,
    reindex_job_for,
    reindex_prune,
    reindex_switch,
)
from retrieval_backends.base import is_external
from retrieval_backends.registry import get_backend


class Command(BaseCommand):
    help = (
        "Re-embed every chunk with EMBEDDER while search keeps serving the current vectors; switch when "
        "complete. Resumable: run it again after an interruption."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--embedder",
            default=None,
            help="short name or dotted path, `@halfvec` to store at half precision (default: "
            "KNOWLEDGE_EMBEDDER with KNOWLEDGE_VECTOR_STORAGE)",
        )
        parser.add_argument("--batch-size", type=int, default=64)
        parser.add_argument("--prune", action="store_true", help="after the switch, delete the old vectors")
        parser.add_argument(
            "--compare",
            type=int,
            default=20,
            help="sample queries compared between the models before the switch (0: none)",
        )
        parser.add_argument(
            "--min-overlap",
            type=float,
            default=0.0,
            help="do not switch when the mean top-10 overlap of the sample is below this (0 to 1)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        spec = options["embedder"] or configured_spec()
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        try:
            embedder = embedder_for(spec)
        except (ImproperlyConfigured, ValueError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"active: {active_spec()}; target: {spec} ({embedder.name}, {embedder.dimension}-d)"
        )
        job = reindex_job_for(spec=spec)
        with tqdm(
            total=chunks_missing(model=embedder.name), unit="chunk", desc="re-embedding", disable=None
        ) as bar:
            done = reindex_backfill(job=job, batch_size=options["batch_size"], on_progress=bar.update)
        self._compare(embedder, options["compare"], options["min_overlap"])
        if is_external(get_backend()):  # the new vectors must be in the index before they serve
            self.stdout.write("pushing the new vectors to the index")
            index_reconcile(time_budget=None)
        reindex_switch(job=job)
        if is_external(get_backend()):
            index_reconcile(time_budget=None)
        self.stdout.write(f"embedded {done} chunks; {spec} is now the active embedder")
        if options["prune"]:
            self.stdout.write(f"deleted {reindex_prune(keep_model=embedder.name)} vectors of other models")

    def _compare(self, embedder: Embedder, sample: int, min_overlap: float) -> None:
        """Report how far the new model's nearest chunks agree with the active one's, before switching."""
        current = active_embedder()
        if sample <= 0 or current.name == embedder.name:
            return
        overlap = models_overlap(old=current, new=embedder, sample=sample)
        if not overlap.queries:
            self.stdout.write("no chunk holds both models' vectors yet: nothing to compare")
            return
        self.stdout.write(
            f"{overlap.queries} sample queries: the top {overlap.k} of {embedder.name} share "
            f"{overlap.mean:.0%} of {current.name}'s on average (lowest {overlap.lowest:.0%})"
        )
        if overlap.mean < min_overlap:
            raise CommandError(
                f"mean overlap {overlap.mean:.2f} is below --min-overlap {min_overlap}: not switching "
                "(the new vectors are kept; run again with a lower --min-overlap to switch)"
            )
