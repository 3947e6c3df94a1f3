"""Index sync under faults, with real worker processes, a real Redis and the real OpenSearch node.

Faults at every step (before the index write, after it but before marking clean, a SIGKILLed worker
mid-task, Redis stopped at commit); once they stop, the reconciler converges: the index equals
PostgreSQL for every document, nothing deleted is served, and `index_sync --status` exits 0. Then two
workers drain a full resync of a 1,000-document connector, and every push is counted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.management import call_command
from django.db import connection
from django.test import override_settings

from knowledge.models import Document
from knowledge.services.connector_sync import connector_sync
from knowledge.services.documents import document_hard_delete, document_set_acl, document_upsert
from knowledge.services.index_sync import index_reconcile, index_status
from knowledge.services.index_sync.snapshot import read_snapshot
from retrieval_backends.opensearch import OpenSearchRetrievalBackend
from retrieval_backends.registry import get_backend, reset_backend
from tests.brokers import PrivateRedis, broker_at
from tests.factories import ConnectorFactory, PrincipalFactory
from tests.opensearch import node_or_skip

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.opensearch, pytest.mark.celery_worker]
ROOT = Path(__file__).resolve().parents[2]
FAULTY = "tests.knowledge.faulty_backend.FaultyOpenSearchBackend"
DOCUMENTS = int(os.environ.get("RESYNC_DOCUMENTS", "1000"))


@dataclass
class Rig:
    broker: PrivateRedis
    control: redis.Redis
    env: dict[str, str]
    workers: list[subprocess.Popen[bytes]]

    def start_worker(self, concurrency: int = 2) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=prefork",
                   f"--concurrency={concurrency}", "--loglevel=WARNING", "--without-gossip",
                   "--without-mingle"]  # fmt: skip
        worker = subprocess.Popen(command, cwd=ROOT, env=self.env, start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        self.workers.append(worker)
        self.wait_ready()
        return worker

    def wait_ready(self, timeout: float = 60) -> None:
        from knowledge.tasks import ping

        ping.apply_async(retry=False)
        wait_for(lambda: self.broker.queued() == 0, timeout, "a worker to consume the broker's queue")

    def kill(self, worker: subprocess.Popen[bytes]) -> None:
        os.killpg(worker.pid, signal.SIGKILL)  # the worker and its prefork children, mid-task
        worker.wait(timeout=10)
        self.workers.remove(worker)

    def stop_all(self) -> None:
        for worker in list(self.workers):
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
            self.workers.remove(worker)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Iterator[Rig]:
    node_or_skip()
    broker = PrivateRedis()
    broker.start()
    prefix = f"test-{uuid.uuid4().hex[:10]}"
    control_url = f"redis://127.0.0.1:{broker.port}/1"
    monkeypatch.setenv("FAULTY_INDEX_PREFIX", prefix)
    monkeypatch.setenv("FAULTY_REDIS_URL", control_url)
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "REDIS_URL": broker.url,
        "KNOWLEDGE_RETRIEVAL_BACKEND": FAULTY,
    }
    rig = Rig(broker, redis.Redis.from_url(control_url), env, [])
    with broker_at(broker.url), override_settings(RETRIEVAL_BACKEND=FAULTY):
        reset_backend()
        try:
            yield rig
        finally:
            rig.stop_all()
            backend = get_backend()
            assert isinstance(backend, OpenSearchRetrievalBackend)
            backend.client.indices.delete(index=f"{prefix}-*", ignore=404)
            broker.stop()
    reset_backend()


def attempts(rig: Rig) -> int:
    value: Any = rig.control.get("attempts")
    return int(value or 0)


def index_matches_postgres() -> None:
    """For every document, the index holds exactly its chunks with PostgreSQL's filters; nothing else."""
    backend = get_backend()
    assert isinstance(backend, OpenSearchRetrievalBackend)
    backend.refresh()
    held: dict[int, dict[str, dict[str, object]]] = {}
    response = backend.client.search(
        index=backend.names.chunks, body={"size": 10000, "query": {"exists": {"field": "document_id"}}}
    )
    for hit in response["hits"]["hits"]:
        held.setdefault(hit["_source"]["document_id"], {})[hit["_id"]] = hit["_source"]
    ids = list(Document.objects.values_list("pk", flat=True))
    states = read_snapshot(document_ids=ids, with_chunks=True).states
    assert set(held) == {s.document_id for s in states if s.chunks}, (
        "deleted documents served, or live ones lost"
    )
    for state in states:
        sources = held.get(state.document_id, {})
        assert set(sources) == {str(c.chunk_id) for c in state.chunks or ()}
        for source in sources.values():
            assert source["acl_tokens"] == list(state.acl_tokens) and source["is_deleted"] == state.is_deleted


def status_exit_code() -> int:
    try:
        call_command("index_sync", "--status")
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_faults_at_every_step_then_the_reconciler_converges(rig: Rig) -> None:
    connector = ConnectorFactory.create()
    user = PrincipalFactory.create(tenant=connector.tenant)
    worker = rig.start_worker()
    docs = [
        document_upsert(
            connector=connector, external_id=f"d{i}", content=f"text {i}", is_public=True
        ).document
        for i in range(6)
    ]
    wait_for(lambda: not index_status().pending, 60, "the worker to push the first documents")

    rig.control.set("fault", "before")  # 1. the commit happened, the index write fails
    seen = attempts(rig)
    document_set_acl(document=docs[0], is_public=False, principals=[user])
    wait_for(lambda: attempts(rig) > seen, 30, "the failing push")
    rig.control.set("fault", "after")  # 2. the index is written, marking clean fails
    seen = attempts(rig)
    document_set_acl(document=docs[1], is_public=False, principals=[user])
    wait_for(lambda: attempts(rig) > seen, 30, "the half-done push")
    rig.control.set("fault", "hang")  # 3. the worker dies mid-task
    document_set_acl(document=docs[2], is_public=False, principals=[user])
    wait_for(lambda: rig.control.get("hanging") is not None, 30, "the push to start")
    rig.kill(worker)
    rig.control.delete("fault")
    rig.broker.stop()  # 4. Redis is down at commit: writes still succeed
    document_set_acl(document=docs[3], is_public=False, principals=[user])
    document_hard_delete(document_id=docs[4].pk)
    document_upsert(
        connector=connector, external_id="new", content="written while Redis was down", is_public=True
    )
    assert index_status().dirty >= 5 and index_status().tombstones == 1
    rig.broker.start()

    stats = index_reconcile(time_budget=None)
    assert stats.ran and stats.failed == 0
    index_matches_postgres()
    assert status_exit_code() == 0


def test_two_workers_drain_a_full_resync_of_a_large_connector(rig: Rig, tmp_path: Path) -> None:
    for i in range(DOCUMENTS):
        (tmp_path / f"doc-{i:04d}.md").write_text(f"# Note {i}\nfile number {i} of the resync")
    connector = ConnectorFactory.create(
        kind="filesystem", config={"path": str(tmp_path)}, default_is_public=True
    )
    outcome = connector_sync(connector=connector)
    assert outcome.stats is not None and outcome.stats.created == DOCUMENTS
    index_reconcile(time_budget=None)
    rig.control.delete("pushes")
    rig.start_worker(concurrency=2)
    rig.start_worker(concurrency=2)
    started = time.monotonic()
    connector_sync(connector=connector, full=True)
    wait_for(lambda: not index_status().pending, 300, "the workers to drain the resync")
    seconds = time.monotonic() - started
    counted: Any = rig.control.hgetall("pushes")
    pushes = {int(k): int(v) for k, v in counted.items()}
    ids = set(Document.objects.filter(connector=connector).values_list("pk", flat=True))
    assert set(pushes) == ids, "a document was skipped"
    duplicates = sum(count - 1 for count in pushes.values())
    rate = DOCUMENTS / seconds
    print(
        f"\nresync: {DOCUMENTS} documents, 2 workers x 2, {seconds:.1f} s, {rate:.0f}/s, {duplicates} dupes"
    )
    index_matches_postgres()
    assert status_exit_code() == 0
