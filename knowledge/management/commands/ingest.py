"""Loads files (md, txt, html, pdf, docx, pptx) or a BEIR corpus into a tenant's connector."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from knowledge.access.principals import principals_resolve
from knowledge.connectors import beir, files
from knowledge.connectors.filesystem import FilesystemKind
from knowledge.connectors.types import SourceDocument, SourceError
from knowledge.errors import KnowledgeError
from knowledge.management.ingest_jobs import ingest_through_jobs
from knowledge.models import Connector, Principal, Tenant
from knowledge.services.connectors import connector_ensure, connector_set_default_acl
from knowledge.services.writes import WriteStats, documents_write

MAX_ERRORS_SHOWN = 20


class Command(BaseCommand):
    help = (
        "Ingest files or folders (md, txt, html, pdf, docx, pptx), or a BEIR corpus (--beir DIR), into a "
        "connector. Files get the ACL of the nearest .kbacl.json in their folder, else the connector's "
        "default ACL."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="*", type=Path, help="files or folders to load")
        parser.add_argument("--beir", type=Path, default=None, help="a BEIR dataset folder (corpus.jsonl)")
        parser.add_argument("--tenant", default=Tenant.DEFAULT_SLUG, help="tenant slug (created if missing)")
        parser.add_argument("--connector", default=None, help="connector name (created if missing)")
        parser.add_argument("--batch-size", type=int, default=32)
        parser.add_argument(
            "--workers",
            type=int,
            default=0,
            help="write through ingest jobs on the bulk queue, shared by up to this many Celery workers "
            "(0: write here, in this process)",
        )
        parser.add_argument("--public", action="store_true", help="connector default ACL: everyone")
        parser.add_argument("--user", action="append", default=[], help="connector default ACL: this user")
        parser.add_argument("--group", action="append", default=[], help="connector default ACL: this group")

    def handle(self, *args: Any, **options: Any) -> None:
        paths: list[Path] = options["paths"]
        if bool(paths) == bool(options["beir"]):
            raise CommandError("give either PATH... or --beir DIR")
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise CommandError(f"no such file or folder: {', '.join(missing)}")
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        if options["workers"] < 0:
            raise CommandError("--workers must be 0 or more")
        tenant, _ = Tenant.objects.get_or_create(slug=options["tenant"], defaults={"name": options["tenant"]})
        errors: list[SourceError] = []
        if options["beir"]:
            try:
                beir.check_dataset(options["beir"])
            except FileNotFoundError as exc:
                raise CommandError(str(exc)) from None
            documents: Iterable[SourceDocument] = beir.iter_corpus(options["beir"])
            total: int | None = beir.corpus_size(options["beir"])
            connector = self._connector(tenant, options["connector"] or "beir", {"kind": "api"})
        else:
            folder = paths[0].resolve() if paths[0].is_dir() else paths[0].resolve().parent
            connector = self._connector(
                tenant,
                options["connector"] or "files",
                {"kind": "filesystem", "config": {"path": str(folder)}},
            )
            documents, total = self._files(paths, errors), None
        self._set_default_acl(connector, options)
        if options["workers"]:
            fanned = ingest_through_jobs(connector, documents, total, options["workers"], self.stderr)
            self._report(fanned.stats, [*errors, *fanned.stats.errors])
            return
        stats = self._run(connector, documents, total, options["batch_size"])
        self._report(stats, [*errors, *stats.errors])

    def _files(self, paths: list[Path], errors: list[SourceError]) -> Iterable[SourceDocument]:
        if len(paths) == 1 and paths[0].is_dir():  # a folder loads like a filesystem connector's sync
            listing = FilesystemKind().list_source({"path": str(paths[0].resolve())})
            errors.extend(listing.errors)
            return listing.documents
        return files.iter_files(paths, errors)

    def _connector(self, tenant: Tenant, name: str, defaults: dict[str, Any]) -> Connector:
        return connector_ensure(tenant=tenant, name=name, **defaults)[0]

    def _set_default_acl(self, connector: Connector, options: dict[str, Any]) -> None:
        if not (options["public"] or options["user"] or options["group"]):
            return
        keys = [("user", u) for u in options["user"]] + [("group", g) for g in options["group"]]
        principals = Principal.objects.filter(
            pk__in=principals_resolve(tenant=connector.tenant_id, keys=keys).values()
        )
        connector_set_default_acl(connector=connector, is_public=options["public"], principals=principals)

    def _run(self, connector: Connector, documents: Any, total: int | None, batch_size: int) -> WriteStats:
        with tqdm(total=total, unit="doc", desc=f"ingest → {connector}", disable=None) as bar:
            chunk_count = [0]

            def progress(docs: int, chunks: int) -> None:
                chunk_count[0] += chunks
                bar.update(docs)
                bar.set_postfix(chunks=chunk_count[0], refresh=False)

            try:
                return documents_write(
                    connector=connector, documents=documents, batch_size=batch_size, on_progress=progress
                )
            except KnowledgeError as exc:
                raise CommandError(exc.message) from None

    def _report(self, stats: WriteStats, errors: list[SourceError]) -> None:
        self.stdout.write(
            f"{stats.documents} documents ({stats.written} written, {stats.unchanged} unchanged), "
            f"{stats.chunks} chunks in {stats.seconds:.1f} s: "
            f"{stats.docs_per_second:.1f} docs/s, {stats.chunks_per_second:.1f} chunks/s"
        )
        for error in errors[:MAX_ERRORS_SHOWN]:
            self.stderr.write(f"error: {error.message}")
        if len(errors) > MAX_ERRORS_SHOWN:
            self.stderr.write(f"... and {len(errors) - MAX_ERRORS_SHOWN} more errors")
