"""Judged query sets in BEIR format, and their corpus ingested (idempotently) into a dedicated tenant."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.utils.text import slugify

from knowledge.connectors import beir
from knowledge.models import Connector, Document, EvalCorpus, Tenant
from knowledge.pipeline.active import active_embedder
from knowledge.pipeline.registry import configured_name
from knowledge.services.connectors import connector_ensure
from knowledge.services.documents import document_hard_delete
from knowledge.services.ingestion import IngestStats, documents_ingest

FIXTURE_DIR = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "retrieval"
FIXTURE_TENANT = "evals-fixture"
BEIR_TENANT_PREFIX = "beir-"
CONNECTOR_NAME = "evals-corpus"


@dataclass(frozen=True)
class Dataset:
    """A BEIR folder, the split whose judged queries are evaluated, and its queries and qrels."""

    name: str
    root: Path
    split: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_dataset(root: Path, split: str, name: str | None = None) -> Dataset:
    """Read a BEIR dataset (named after its folder by default); FileNotFoundError names the missing file."""
    beir.check_dataset(root, split)
    qrels = beir.load_qrels(root, split)
    queries = beir.load_queries(root)
    missing = sorted(set(qrels) - set(queries))
    if missing:
        raise ValueError(
            f"{root}: qrels/{split}.tsv judges queries missing from queries.jsonl: {missing[:5]}"
        )
    return Dataset(name or root.resolve().name, root, split, {q: queries[q] for q in qrels}, qrels)


def default_tenant_slug(root: Path) -> str:
    """`beir-<folder name>`, e.g. `beir-scifact`."""
    return f"{BEIR_TENANT_PREFIX}{slugify(root.resolve().name)}"[:64]


def is_eval_tenant(slug: str) -> bool:
    """A tenant `manage.py evals retrieval` made for its corpus (the fixture's, or a BEIR one's, or
    either's copy per embedder of `--embedders`)."""
    return slug == FIXTURE_TENANT or slug.startswith((f"{FIXTURE_TENANT}-", BEIR_TENANT_PREFIX))


def model_tenant_slug(base: str, spec: str) -> str:
    """Each embedder of a model comparison keeps its own copy of the corpus, so each is ingested once."""
    return f"{base}-{slugify(spec.rsplit('.', 1)[-1])}"[:64]


@dataclass(frozen=True)
class IngestOutcome:
    connector: Connector
    reused: bool
    purged: int
    stats: IngestStats | None
    documents: int = 0  # in the copy, and how long its (last complete) ingest took
    chunks: int = 0
    ingest_seconds: float = 0.0

    @property
    def documents_per_second(self) -> float:
        return self.documents / self.ingest_seconds if self.ingest_seconds else 0.0

    @property
    def chunks_per_second(self) -> float:
        return self.chunks / self.ingest_seconds if self.ingest_seconds else 0.0


def _purge(connector: Connector) -> int:
    """Hard-delete the connector's documents (chunks and vectors go with them)."""
    ids = list(Document.objects.filter(connector=connector).values_list("pk", flat=True))
    return sum(document_hard_delete(document_id=pk) for pk in ids)


def corpus_fingerprint(root: Path) -> dict[str, str]:
    """What the ingested copy depends on: the corpus file, the embedder and the chunker."""
    return {
        "corpus_hash": beir.corpus_hash(root),
        "embedder": active_embedder().name,
        "chunker": configured_name("chunker"),
    }


def corpus_ingest(
    *,
    root: Path,
    tenant_slug: str,
    force: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
) -> IngestOutcome:
    """Ingest the corpus unless the connector already holds it (same fingerprint), or always with `force`.

    `documents_ingest` skips unchanged documents, so a new embedder or chunker (or `force`) deletes the
    connector's documents first: every chunk and vector is then made again.
    """
    tenant, _ = Tenant.objects.get_or_create(slug=tenant_slug, defaults={"name": tenant_slug})
    connector, _ = connector_ensure(tenant=tenant, name=CONNECTOR_NAME, kind=Connector.Kind.API)
    record, _ = EvalCorpus.objects.get_or_create(connector=connector)
    wanted = corpus_fingerprint(root)
    stored = record.fingerprint()
    if stored == wanted and not force:
        return IngestOutcome(connector, True, 0, None, record.documents, record.chunks, record.ingest_seconds)
    rebuild = force or any(stored[key] != wanted[key] for key in ("embedder", "chunker"))
    purged = _purge(connector) if rebuild else 0
    # The corpus stays unknown until the ingest completes, so an interrupted run is resumed.
    _record(record, corpus_hash="", embedder=wanted["embedder"], chunker=wanted["chunker"])
    stats = documents_ingest(connector=connector, documents=beir.iter_corpus(root), on_progress=on_progress)
    purged += _drop_missing(connector, root)
    _record(
        record,
        corpus_hash=wanted["corpus_hash"],
        documents=stats.documents,
        chunks=stats.chunks,
        ingest_seconds=stats.seconds,
    )
    return IngestOutcome(connector, False, purged, stats, stats.documents, stats.chunks, stats.seconds)


def _record(record: EvalCorpus, **values: str | float) -> None:
    for name, value in values.items():
        setattr(record, name, value)
    record.save(update_fields=[*values, "updated_at"])


def _drop_missing(connector: Connector, root: Path) -> int:
    """Delete the documents a changed corpus no longer has."""
    current = {d.external_id for d in beir.iter_corpus(root)}
    stale = Document.objects.filter(connector=connector).exclude(external_id__in=current)
    return sum(document_hard_delete(document_id=pk) for pk in stale.values_list("pk", flat=True))


def write_json(path: Path, payload: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
