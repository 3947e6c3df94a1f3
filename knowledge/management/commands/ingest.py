"""Loads files (md, txt, html) or a BEIR corpus into a tenant's connector, with a progress bar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from knowledge.connectors import beir, files
from knowledge.errors import KnowledgeError
from knowledge.models import Connector, Tenant
from knowledge.services.ingestion import documents_ingest


class Command(BaseCommand):
    help = "Ingest files or folders (md, txt, html), or a BEIR corpus (--beir DIR), into a connector."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="*", type=Path, help="files or folders to load")
        parser.add_argument("--beir", type=Path, default=None, help="a BEIR dataset folder (corpus.jsonl)")
        parser.add_argument("--tenant", default=Tenant.DEFAULT_SLUG, help="tenant slug (created if missing)")
        parser.add_argument("--connector", default=None, help="connector name (created if missing)")
        parser.add_argument("--batch-size", type=int, default=32)

    def handle(self, *args: Any, **options: Any) -> None:
        paths: list[Path] = options["paths"]
        if bool(paths) == bool(options["beir"]):
            raise CommandError("give either PATH... or --beir DIR")
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise CommandError(f"no such file or folder: {', '.join(missing)}")
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        tenant, _ = Tenant.objects.get_or_create(slug=options["tenant"], defaults={"name": options["tenant"]})
        if options["beir"]:
            try:
                beir.check_dataset(options["beir"])
            except FileNotFoundError as exc:
                raise CommandError(str(exc)) from None
            documents, total = beir.iter_corpus(options["beir"]), beir.corpus_size(options["beir"])
            connector = self._connector(tenant, options["connector"] or "beir", {"kind": "api"})
        else:
            documents, total = files.iter_files(paths), None
            folder = str(paths[0].resolve() if paths[0].is_dir() else paths[0].resolve().parent)
            connector = self._connector(
                tenant, options["connector"] or "files", {"kind": "filesystem", "config": {"path": folder}}
            )
        self._run(connector, documents, total, options["batch_size"])

    def _connector(self, tenant: Tenant, name: str, defaults: dict[str, Any]) -> Connector:
        connector, _ = Connector.objects.get_or_create(tenant=tenant, name=name, defaults=defaults)
        return connector

    def _run(self, connector: Connector, documents: Any, total: int | None, batch_size: int) -> None:
        with tqdm(total=total, unit="doc", desc=f"ingest → {connector}", disable=None) as bar:
            chunk_count = [0]

            def progress(docs: int, chunks: int) -> None:
                chunk_count[0] += chunks
                bar.update(docs)
                bar.set_postfix(chunks=chunk_count[0], refresh=False)

            try:
                stats = documents_ingest(
                    connector=connector, documents=documents, batch_size=batch_size, on_progress=progress
                )
            except KnowledgeError as exc:
                raise CommandError(exc.message) from None
        self.stdout.write(
            f"{stats.documents} documents ({stats.written} written, {stats.unchanged} unchanged), "
            f"{stats.chunks} chunks in {stats.seconds:.1f} s: "
            f"{stats.docs_per_second:.1f} docs/s, {stats.chunks_per_second:.1f} chunks/s"
        )
