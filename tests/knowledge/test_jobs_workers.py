"""Ingest jobs on real worker processes: a worker SIGKILLed mid-job loses and duplicates nothing, and an
ACL change reaches OpenSearch on the priority queue while a bulk job keeps the bulk worker busy.

JOB_PRIORITY_DOCUMENTS (default 1500) sizes the bulk job and JOB_PRIORITY_ROUNDS (10) the ACL changes
measured; JOB_PRIORITY_EMBEDDER=local runs the workers
on the default local model, as production does (the suite uses the hashing embedder).
"""

from __future__ import annotations

import io
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from knowledge.access.principals import acl_tokens
from knowledge.models import Chunk, Document, IngestJob, IngestJobItem, Principal
from knowledge.selectors.jobs import job_progress
from knowledge.services.documents import document_set_acl
from knowledge.services.jobs import jobs_resume
from retrieval_backends.opensearch import OpenSearchRetrievalBackend
from retrieval_backends.registry import get_backend, reset_backend
from tests.api.conftest import bearer, issue_key
from tests.brokers import PrivateRedis, broker_at
from tests.factories import TenantFactory
from tests.opensearch import node_or_skip, settle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery_worker]
ROOT = Path(__file__).resolve().parents[2]
FAULTY = "tests.knowledge.faulty_backend.FaultyOpenSearchBackend"  # the real backend; no fault is set
PRIORITY_DOCUMENTS = int(os.environ.get("JOB_PRIORITY_DOCUMENTS", "1500"))
PRIORITY_ROUNDS = int(os.environ.get("JOB_PRIORITY_ROUNDS", "10"))


@dataclass
class Workers:
    broker: PrivateRedis
    env: dict[str, str]
    scratch: str
    running: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, queue: str, beat: bool = False) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=prefork",
                   "--concurrency=1", "-Q", queue, "--loglevel=WARNING", "--without-gossip",
                   "--without-mingle", "-n", f"{queue}-{uuid.uuid4().hex[:6]}@%h"]  # fmt: skip
        if beat:
            command += ["--beat", "--schedule", str(Path(self.scratch) / f"beat-{uuid.uuid4().hex[:6]}")]
        worker = subprocess.Popen(command, cwd=ROOT, env=self.env, start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        self.running.append(worker)
        from knowledge.tasks import ping  # the tasks module imports every service: only once needed

        ping.apply_async(queue=queue, retry=False)
        wait_for(lambda: self.broker.queued(queue) == 0, 60, f"a worker to consume {queue!r}")
        return worker

    def kill(self, worker: subprocess.Popen[bytes]) -> None:
        os.killpg(worker.pid, signal.SIGKILL)  # the worker and its prefork child, mid-slice
        worker.wait(timeout=10)
        self.running.remove(worker)

    def stop_all(self) -> None:
        for worker in list(self.running):
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
            self.running.remove(worker)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    broker = PrivateRedis()
    broker.start()
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "REDIS_URL": broker.url,
    }
    rig = Workers(broker, env, str(tmp_path))
    with broker_at(broker.url):
        try:
            yield rig
        finally:
            rig.stop_all()
            broker.stop()


def documents(count: int, prefix: str = "bulk") -> list[dict[str, Any]]:
    text = "The harbour ferry timetable changes with the tides; the night crew loads cargo at pier {}. "
    return [
        {"id": f"{prefix}-{i}", "content": text.format(i) * 3, "acl": {"groups": ["crew"]}}
        for i in range(count)
    ]


def _equal(read: Callable[[], object], wanted: object) -> bool:
    return read() == wanted


def search_as_alice(api: APIClient) -> set[str]:
    body = {"query": "salary bands", "on_behalf_of": "alice@example.com"}
    response = api.post("/api/v1/search", body, format="json")
    assert response.status_code == 200, response.content
    return {hit["document_id"] for hit in response.json()["results"]}


def progress(job_id: int) -> dict[str, int]:
    return job_progress(job=IngestJob.objects.get(pk=job_id)).documents


def test_a_worker_killed_mid_job_loses_and_duplicates_nothing(workers: Workers) -> None:
    tenant = TenantFactory.create()
    api = APIClient()
    api.credentials(**bearer(issue_key(tenant=tenant)))
    count = 600
    workers.env["KNOWLEDGE_JOB_SLICE_DOCUMENTS"] = "4"
    first = workers.start("bulk")
    response = api.post("/api/v1/index/batch", documents(count), format="json")
    assert response.status_code == 202, response.content
    job_id = response.json()["id"]
    wait_for(lambda: progress(job_id)["done"] >= 40, 120, "the worker to write some slices")
    workers.kill(first)
    halfway = progress(job_id)
    assert 0 < halfway["done"] < count and halfway["pending"] > 0, halfway
    assert Document.objects.filter(tenant=tenant).count() == halfway["done"]  # no half-written slice

    # The killed worker's message is unacknowledged (Redis returns it only after an hour): the
    # resume sweep, run by beat in production, wakes the job once its heartbeat is stale.
    workers.start("bulk")
    a_minute_ago = timezone.now() - timedelta(minutes=1)
    IngestJob.objects.filter(pk=job_id).update(heartbeat_at=a_minute_ago)  # the dead worker's last beat
    with override_settings(KNOWLEDGE_JOB_STALE_SECONDS=30):
        assert jobs_resume() == [job_id]
    wait_for(lambda: IngestJob.objects.get(pk=job_id).finished, 180, "the second worker to finish the job")
    assert IngestJob.objects.get(pk=job_id).state == "succeeded"
    assert progress(job_id) == {"total": count, "pending": 0, "done": count, "failed": 0, "cancelled": 0}
    ids = list(Document.objects.filter(tenant=tenant).values_list("external_id", flat=True))
    assert sorted(ids) == sorted(f"bulk-{i}" for i in range(count))
    written = sum(IngestJobItem.objects.filter(job_id=job_id).values_list("chunks", flat=True))
    assert written == Chunk.objects.filter(document__tenant=tenant).count() >= count


@pytest.mark.opensearch
def test_acl_changes_reach_opensearch_while_a_bulk_job_runs(
    workers: Workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    node_or_skip()
    prefix = f"test-{uuid.uuid4().hex[:10]}"
    control = f"redis://127.0.0.1:{workers.broker.port}/1"
    monkeypatch.setenv("FAULTY_INDEX_PREFIX", prefix)
    monkeypatch.setenv("FAULTY_REDIS_URL", control)
    embedder = os.environ.get("JOB_PRIORITY_EMBEDDER")
    workers.env.update(
        FAULTY_INDEX_PREFIX=prefix, FAULTY_REDIS_URL=control, KNOWLEDGE_RETRIEVAL_BACKEND=FAULTY
    )
    if embedder:
        workers.env["KNOWLEDGE_EMBEDDER"] = embedder
    with override_settings(RETRIEVAL_BACKEND=FAULTY):
        reset_backend()
        backend = get_backend()
        assert isinstance(backend, OpenSearchRetrievalBackend)
        try:
            _acl_latency_under_bulk(workers, backend)
        finally:
            backend.client.indices.delete(index=f"{prefix}-*", ignore=404)
    reset_backend()


def _acl_latency_under_bulk(workers: Workers, backend: OpenSearchRetrievalBackend) -> None:
    tenant = TenantFactory.create()
    alice = Principal.objects.create(tenant=tenant, kind="user", external_id="alice@example.com")
    api = APIClient()
    api.credentials(**bearer(issue_key(tenant=tenant, on_behalf_of=True)))
    secret = {"id": "salaries", "content": "Salary bands for 2026.", "acl": {"users": ["alice@example.com"]}}
    assert api.post("/api/v1/index", secret, format="json").status_code == 201
    document = Document.objects.get(tenant=tenant, external_id="salaries")
    chunk_id = Chunk.objects.filter(document=document).values_list("pk", flat=True).first()
    settle(backend)
    workers.start("bulk")
    workers.start("priority", beat=True)  # the reconciler runs too, as in production
    with override_settings(KNOWLEDGE_BATCH_MAX_DOCUMENTS=PRIORITY_DOCUMENTS, KNOWLEDGE_MAX_BATCH_BYTES=2**30):
        job_id = api.post("/api/v1/index/batch", documents(PRIORITY_DOCUMENTS), format="json").json()["id"]
    wait_for(lambda: progress(job_id)["done"] > 0, 120, "the bulk worker to start the job")

    def indexed_tokens() -> set[str]:
        body = {"query": {"term": {"chunk_id": chunk_id}}, "_source": ["acl_tokens"]}
        hits = backend.client.search(index=backend.names.chunks, body=body)["hits"]["hits"]
        return set(hits[0]["_source"]["acl_tokens"]) if hits else set()

    latencies = []
    for round_ in range(PRIORITY_ROUNDS):
        granted = round_ % 2 == 1  # revoke, grant back, revoke, ...
        started = time.monotonic()
        document_set_acl(document=document, is_public=False, principals=[alice] if granted else [])
        wanted = set(acl_tokens(is_public=False, principals=[alice] if granted else []))
        if not granted:  # a revocation holds at once: PostgreSQL re-checks every hit OpenSearch returns
            assert "salaries" not in search_as_alice(api)
        wait_for(partial(_equal, indexed_tokens, wanted), 30, "the ACL change to reach OpenSearch")
        latencies.append(time.monotonic() - started)
    state = progress(job_id)
    assert state["pending"] > 0, f"the bulk job finished before the measurement ended: {state}"
    p95 = sorted(latencies)[int(0.95 * (len(latencies) - 1))]
    print(
        f"\nACL change -> OpenSearch during a {PRIORITY_DOCUMENTS}-document job "
        f"({state['done']} written meanwhile): p50 {statistics.median(latencies):.2f} s, p95 {p95:.2f} s"
    )
    assert p95 < 5, latencies


def test_ingest_fans_out_to_bulk_workers_with_each_files_acl(workers: Workers, tmp_path: Path) -> None:
    """`manage.py ingest --workers 2`: two workers share the jobs; a sidecar's ACL and the connector's
    default (for files without one) arrive as a synchronous ingest would write them."""
    folder = tmp_path / "docs"
    (folder / "board").mkdir(parents=True)
    for i in range(40):
        (folder / f"note-{i}.md").write_text(f"# Note {i}\nThe harbour ferry schedule, part {i}.")
    (folder / "board" / "minutes.md").write_text("# Minutes\nThe board met on Monday.")
    (folder / "board" / ".kbacl.json").write_text(json.dumps({"groups": ["board"]}))
    workers.start("bulk")
    workers.start("bulk")
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "ingest", str(folder), "--tenant", "fan-out", "--public", "--workers", "2", stdout=out, stderr=err
    )
    assert "41 documents" in out.getvalue(), (out.getvalue(), err.getvalue())
    documents = {d.external_id: d for d in Document.objects.filter(tenant__slug="fan-out")}
    assert len(documents) == 41
    minutes = documents["board/minutes.md"]
    assert not minutes.is_public
    assert [p.external_id for p in minutes.allowed_principals.all()] == ["board"]
    assert all(d.is_public for name, d in documents.items() if name != "board/minutes.md")
    [job] = IngestJob.objects.filter(tenant__slug="fan-out")
    assert job.state == "succeeded" and job.connector.kind == "filesystem"
