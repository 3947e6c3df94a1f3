"""Searches on a real streaming replica (a second PostgreSQL made from pg0's binaries by
scripts/pg_replica.sh): a tenant's lanes go there only once it has replayed the tenant's last access
change; a revocation it has not replayed yet is searched on the primary, other tenants stay on it."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from django.db import connections
from django.db.backends.postgresql.base import DatabaseWrapper

from bench.common import ROOT
from knowledge.pipeline.active import active_embedder
from knowledge.services.documents import document_upsert
from knowledge.store import replica
from retrieval_backends.postgres import PostgresRetrievalBackend
from retrieval_backends.types import SearchScope
from tests.api.test_outages import closed_port
from tests.factories import ConnectorFactory

pytestmark = pytest.mark.django_db(transaction=True)  # a replica sees only what was committed
SCRIPT = str(ROOT / "scripts" / "pg_replica.sh")


@pytest.fixture(scope="module")
def replica_port() -> Iterator[int]:
    done = subprocess.run([SCRIPT, "up"], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    url = next(line for line in done.stdout.splitlines() if line.startswith("KNOWLEDGE_READ_REPLICA_URL="))
    yield int(urlsplit(url.split("=", 1)[1]).port or 0)
    subprocess.run([SCRIPT, "down"], capture_output=True, timeout=120, check=False)


def _alias(name: str, port: int) -> Iterator[str]:
    """A connection alias, in this thread, for the test database on `port`. Not in DATABASES: Django's
    test case would flush it (a replica is read-only) or refuse it; the lanes here run in this thread."""
    settings_dict = {**connections["default"].settings_dict, "PORT": str(port)}
    connections[name] = DatabaseWrapper(settings_dict, alias=name)
    yield name
    connections[name].close()
    del connections[name]


@pytest.fixture
def replica_alias(replica_port: int) -> Iterator[str]:
    for alias in _alias("replica", replica_port):
        yield alias
        with connections[alias].cursor() as cursor:  # a failed test must not leave replay paused
            cursor.execute("SELECT pg_wal_replay_resume()")


def replayed(alias: str) -> None:
    """Wait until the replica has replayed everything the primary has written so far."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()")
        target = cursor.fetchone()[0]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [target])
            if cursor.fetchone()[0]:
                return
        time.sleep(0.05)
    raise AssertionError("the replica did not catch up in 30 s")


def found(backend: PostgresRetrievalBackend, scope: SearchScope, text: str) -> set[str]:
    """Chunk texts both lanes return for `text`."""
    embedder = active_embedder()
    vector = embedder.embed_queries([text])[0]
    hits = backend.keyword_search(scope, text, ["english"], 10)
    hits += backend.vector_search(scope, vector, embedder.dimension, 10, model=embedder.name)
    ids = {h.chunk_id for h in hits}
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT content FROM knowledge_chunk WHERE id = ANY(%s)", [list(ids)])
        return {row[0] for row in cursor.fetchall()}


def routes() -> dict[str, int]:
    return dict(replica.ROUTES)


def test_a_revocation_not_yet_replayed_is_searched_on_the_primary(replica_alias: str) -> None:
    first, second = ConnectorFactory.create(), ConnectorFactory.create()
    text = "harbour ferry timetable for the night crossing"
    document_upsert(connector=first, external_id="ferry", content=text, is_public=True)
    document_upsert(connector=second, external_id="ferry", content=text, is_public=True)
    scopes = [
        SearchScope(tenant_id=c.tenant_id, principal_tokens=frozenset({"public"})) for c in (first, second)
    ]
    backend = PostgresRetrievalBackend(read_replica=replica_alias)
    replayed(replica_alias)
    replica.ROUTES.clear()
    assert found(backend, scopes[0], text) == {text} and routes() == {"replica": 2}

    with connections[replica_alias].cursor() as cursor:
        cursor.execute("SELECT pg_wal_replay_pause()")
    document_upsert(connector=first, external_id="ferry", content=text, is_public=False)  # revoked
    with connections[replica_alias].cursor() as cursor:  # the replica still lets everyone read it
        cursor.execute("SELECT acl_tokens FROM knowledge_chunk WHERE tenant_id = %s", [first.tenant_id])
        assert cursor.fetchall() == [(["public"],)]
    replica.ROUTES.clear()
    assert found(backend, scopes[0], text) == set()  # on the primary
    assert routes() == {"stale": 2}
    assert found(backend, scopes[1], text) == {text}  # the other tenant is still served by the replica
    assert routes() == {"stale": 2, "replica": 2}

    with connections[replica_alias].cursor() as cursor:
        cursor.execute("SELECT pg_wal_replay_resume()")
    replayed(replica_alias)
    replica.ROUTES.clear()
    assert found(backend, scopes[0], text) == set() and routes() == {"replica": 2}


def test_a_deletion_raises_the_mark_and_an_unreachable_replica_leaves_search_on_the_primary() -> None:
    connector = ConnectorFactory.create()
    document_upsert(connector=connector, external_id="d", content="quarterly cargo manifest", is_public=True)
    assert replica.access_version("default", connector.tenant_id) == 0  # inserts hide nothing
    document_upsert(connector=connector, external_id="d", content="a new manifest", is_public=True)
    assert replica.access_version("default", connector.tenant_id) == 1  # the old chunks went
    scope = SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))
    for alias in _alias("nowhere", closed_port()):
        replica.ROUTES.clear()
        assert found(PostgresRetrievalBackend(read_replica=alias), scope, "new manifest") == {
            "a new manifest"
        }
        assert routes() == {"unreachable": 2}
