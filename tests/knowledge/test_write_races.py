"""Interleavings that used to lose permissions: each writer decides under the lock the other holds."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from django.db import connection, transaction

from knowledge.models import Chunk, ChunkEmbedding, Document
from knowledge.services.documents import document_hard_delete, document_set_acl, document_upsert
from knowledge.store.chunks import index_embeddings
from retrieval_backends.types import EmbeddingUpdate
from tests.factories import ConnectorFactory, PrincipalFactory

pytestmark = pytest.mark.django_db(transaction=True)


def lock_waiters() -> int:
    """Sessions of this database waiting on a lock (fresh: a transaction caches what it saw)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return int(cursor.fetchone()[0])


def wait_until_blocked(timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lock_waiters():
            return True
        time.sleep(0.02)
    return False


def in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # reported by the test
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


def hold(
    write: Callable[[], object], started: threading.Event, release: threading.Event
) -> Callable[[], None]:
    """A writer that keeps its transaction (and its locks) open until released."""

    def run() -> None:
        with transaction.atomic():
            write()
            started.set()
            release.wait(10)

    return run


def run_interleaved(first: Callable[[], object], second: Callable[[], object]) -> bool:
    """`first` commits only after `second` started and (if it must) waits for first's locks."""
    started, release = threading.Event(), threading.Event()
    a, a_errors = in_thread(hold(first, started, release))
    assert started.wait(10)
    b, b_errors = in_thread(second)
    blocked = wait_until_blocked()
    release.set()
    a.join(15)
    b.join(15)
    assert not a_errors and not b_errors, a_errors + b_errors
    return blocked


def test_concurrent_upserts_never_leave_old_chunks_under_new_content() -> None:
    connector = ConnectorFactory.create()
    user = PrincipalFactory.create(tenant=connector.tenant)
    document = document_upsert(
        connector=connector, external_id="d", content="alpha harbour", is_public=True
    ).document
    run_interleaved(
        lambda: document_upsert(
            connector=connector, external_id="d", content="beta secret", principals=[user]
        ),
        lambda: document_upsert(
            connector=connector, external_id="d", content="alpha harbour", is_public=True
        ),
    )
    document.refresh_from_db()
    chunks = list(Chunk.objects.filter(document=document))
    assert document.content == "alpha harbour"
    assert [c.content for c in chunks] == ["alpha harbour"] and chunks[0].acl_tokens == ["public"]


def _backfill(chunk_id: int) -> Callable[[], object]:
    vector = EmbeddingUpdate(chunk_id=chunk_id, vector=(0.0, 1.0, 0.0), model="next-model")
    return lambda: index_embeddings([vector], 3)


def test_an_acl_change_during_a_backfill_reaches_the_new_vector() -> None:
    connector = ConnectorFactory.create()
    user = PrincipalFactory.create(tenant=connector.tenant)
    document = document_upsert(connector=connector, external_id="d", content="text", is_public=True).document
    chunk = Chunk.objects.get(document=document)
    blocked = run_interleaved(
        lambda: document_set_acl(document=document, is_public=False, principals=[user]), _backfill(chunk.pk)
    )
    assert blocked  # the backfill waited for the ACL change instead of copying the old filters
    assert ChunkEmbedding.objects.get(chunk=chunk, model="next-model").acl_tokens == [user.acl_token]


def test_a_backfill_during_an_acl_change_is_corrected_by_it() -> None:
    connector = ConnectorFactory.create()
    user = PrincipalFactory.create(tenant=connector.tenant)
    document = document_upsert(connector=connector, external_id="d", content="text", is_public=True).document
    chunk = Chunk.objects.get(document=document)
    run_interleaved(
        _backfill(chunk.pk),
        lambda: document_set_acl(
            document=Document.objects.get(pk=document.pk), is_public=False, principals=[user]
        ),
    )
    tokens = {
        tuple(t) for t in ChunkEmbedding.objects.filter(chunk=chunk).values_list("acl_tokens", flat=True)
    }
    assert tokens == {(user.acl_token,)}


def test_a_write_racing_deletes_of_the_same_document_always_lands() -> None:
    """A delete committed between the writer's placeholder insert and its row lock left it without
    the row (a KeyError, a 500 through the API): the writer now inserts and locks again."""
    connector = ConnectorFactory.create()
    stop = threading.Event()

    def delete_repeatedly() -> None:
        while not stop.is_set():
            for pk in Document.objects.filter(connector=connector).values_list("pk", flat=True):
                document_hard_delete(document_id=pk)

    deleters = [in_thread(delete_repeatedly) for _ in range(2)]
    writers = [
        in_thread(
            lambda: [
                document_upsert(connector=connector, external_id="contested", content=f"v{i}", is_public=True)
                for i in range(40)
            ]
        )
        for _ in range(2)
    ]
    for thread, _ in writers:
        thread.join(120)
    stop.set()
    for thread, _ in deleters:
        thread.join(30)
    errors = [e for _, found in writers + deleters for e in found]
    assert not errors, errors
    final = document_upsert(connector=connector, external_id="contested", content="last", is_public=True)
    assert Chunk.objects.filter(document=final.document).count() == 1


def test_a_write_lands_at_the_first_try_when_every_lock_attempt_is_raced_by_a_delete(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bad order, forced: before each of the writer's row inserts another writer commits the row,
    and right after it a delete of that row commits. A writer that inserts and only then locks finds
    the row gone every time (it gave up after five tries); one whose insert takes the lock makes the
    delete wait, and lands."""
    connector = ConnectorFactory.create()
    writer = threading.current_thread()
    insert = Document.objects.bulk_create
    attempts: list[bool] = []
    others: list[tuple[threading.Thread, list[BaseException]]] = []

    def elsewhere(fn: Callable[[], object]) -> bool:
        """Run fn in another transaction; True when it had to wait for this writer's lock."""
        thread, errors = in_thread(fn)
        others.append((thread, errors))
        while thread.is_alive() and not lock_waiters():
            thread.join(0.01)
        return thread.is_alive()

    def raced_insert(*args: object, **kwargs: object) -> object:
        if threading.current_thread() is not writer:
            return insert(*args, **kwargs)  # type: ignore[arg-type]
        elsewhere(lambda: document_upsert(connector=connector, external_id="contested", content="other"))
        created = insert(*args, **kwargs)  # type: ignore[arg-type]
        attempts.append(elsewhere(lambda: [document_hard_delete(document_id=pk) for pk in contested()]))
        return created

    def contested() -> list[int]:
        return list(
            Document.objects.filter(connector=connector, external_id="contested").values_list("pk", flat=True)
        )

    monkeypatch.setattr(Document.objects, "bulk_create", raced_insert)
    try:
        result = document_upsert(connector=connector, external_id="contested", content="mine", is_public=True)
    finally:
        monkeypatch.undo()
        for thread, _ in others:  # the waiting delete goes ahead once the write committed
            thread.join(30)
    assert result.document.content == "mine" and attempts == [True]  # one try; the delete waited for it
    assert not [e for _, errors in others for e in errors]
    assert not Document.objects.filter(connector=connector).exists()  # then the delete landed too


def test_a_connector_default_never_overwrites_an_acl_a_sync_just_took_from_the_source() -> None:
    """The default's documents are read without a lock; a sync that meanwhile gave one of them an ACL
    from its ACL file holds the row. Re-applying the (public) default must re-check the origin once
    it has the lock, not overwrite the file's narrower ACL."""
    from knowledge.connectors.types import SourceAcl, SourceDocument
    from knowledge.services.connectors import connector_apply_default_acl
    from knowledge.services.writes import documents_write

    connector = ConnectorFactory.create(kind="filesystem", config={"path": "/srv/x"}, default_is_public=True)
    documents_write(connector=connector, documents=[SourceDocument("f.md", "from the folder")])
    document = Document.objects.get(connector=connector)
    assert document.is_public and document.acl_origin == Document.AclOrigin.CONNECTOR
    narrowed = SourceDocument("f.md", "from the folder", acl=SourceAcl.of(users=["erin@example.com"]))
    blocked = run_interleaved(
        lambda: documents_write(connector=connector, documents=[narrowed]),
        lambda: connector_apply_default_acl(connector=connector),
    )
    document.refresh_from_db()
    assert blocked  # the default waited for the sync's lock
    assert (document.is_public, document.acl_origin) == (False, Document.AclOrigin.SOURCE)
    assert list(document.allowed_principals.values_list("external_id", flat=True)) == ["erin@example.com"]
    assert all(c.acl_tokens != ["public"] for c in Chunk.objects.filter(document=document))
