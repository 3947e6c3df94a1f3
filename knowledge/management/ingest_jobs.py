"""`manage.py ingest --workers N`: a corpus as ingest jobs on the bulk queue, waited for with progress."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from django.conf import settings
from tqdm import tqdm

from knowledge.connectors.types import SourceDocument, SourceError
from knowledge.models import Connector, IngestJob
from knowledge.selectors.jobs import job_progress, jobs_tally
from knowledge.services.api_indexing import source_payload
from knowledge.services.jobs import job_submit
from knowledge.services.writes import WriteStats, documents_check

POLL_SECONDS = 0.25
QUIET_SECONDS = 60  # no progress for this long: say that a bulk worker may be missing


@dataclass
class Fanned:
    jobs: list[int] = field(default_factory=list)
    stats: WriteStats = field(default_factory=WriteStats)


def ingest_through_jobs(
    connector: Connector, documents: Iterable[SourceDocument], total: int | None, workers: int, err: Any
) -> Fanned:
    """Submit every document (invalid ones are reported, not submitted) in jobs of at most
    KNOWLEDGE_BATCH_MAX_DOCUMENTS, each shared by up to `workers` workers; wait until all finish."""
    fanned, started = Fanned(), time.monotonic()
    unique = {d.external_id: d for d in documents}  # last one wins, as in a synchronous ingest
    iterator = iter(unique.values())
    while group := list(islice(iterator, settings.KNOWLEDGE_BATCH_MAX_DOCUMENTS)):
        refused = dict(documents_check(connector=connector, documents=group))
        for position, error in refused.items():
            eid = group[position].external_id
            fanned.stats.errors.append(SourceError(f"{eid}: {error.message}", eid))
        payloads = [source_payload(d) for i, d in enumerate(group) if i not in refused]
        if payloads:
            submitted = job_submit(
                tenant=connector.tenant, documents=payloads, connector=connector, parallel=workers
            )
            fanned.jobs.append(submitted.job.pk)
    err.write(f"submitted {len(unique)} documents as job(s) {', '.join(map(str, fanned.jobs)) or 'none'}")
    _wait(fanned, len(unique), err)
    fanned.stats.documents = len(unique)
    fanned.stats.seconds = time.monotonic() - started
    return fanned


def _wait(fanned: Fanned, total: int, err: Any) -> None:
    done, last_change, warned, finished = 0, time.monotonic(), False, False
    with tqdm(total=total, unit="doc", desc="ingest jobs", disable=None) as bar:
        while not finished:
            settled, chunks, finished = jobs_tally(job_ids=fanned.jobs)
            bar.update(settled - done)
            bar.set_postfix(chunks=chunks, refresh=False)
            if settled != done:
                done, last_change = settled, time.monotonic()
            elif not warned and time.monotonic() - last_change > QUIET_SECONDS:
                err.write(
                    "no progress for a minute: is a worker consuming the bulk queue? (manage.py doctor)"
                )
                warned = True
            if not finished:
                time.sleep(POLL_SECONDS)
    for job in IngestJob.objects.filter(pk__in=fanned.jobs):
        progress = job_progress(job=job)
        fanned.stats.created += progress.documents["done"]
        fanned.stats.chunks += progress.chunks_written
        fanned.stats.errors += [SourceError(e["message"], e["id"]) for e in progress.errors]
