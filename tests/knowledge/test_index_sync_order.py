"""Index pushes that finish out of order, on the real OpenSearch node: the bad interleavings forced with
events (an older push held at its bulk request while a newer push or a deletion completes; a deleting
transaction that commits while a rebuild runs). The index ends up holding exactly PostgreSQL's state."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection, transaction

from knowledge.models import Chunk, Document, IndexTombstone
from knowledge.services.documents import document_hard_delete, document_upsert
from knowledge.services.index_sync import index_reconcile
from knowledge.services.index_sync.push import documents_push, tombstones_push
from knowledge.services.index_sync.rebuild import index_rebuild
from retrieval_backends.opensearch import OpenSearchRetrievalBackend
from retrieval_backends.types import SearchScope
from tests.factories import ConnectorFactory
from tests.opensearch import opensearch_backend

__all__ = ["opensearch_backend"]  # the fixture
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.opensearch]
PUBLIC = frozenset({"public"})


class HeldBulk:
    """Holds the bulk requests of one thread at a gate until released (the other threads' pass)."""

    def __init__(self, backend: OpenSearchRetrievalBackend) -> None:
        self.client = backend.client
        self.original = backend.client.bulk
        self.held_thread: threading.Thread | None = None
        self.arrived, self.release = threading.Event(), threading.Event()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is self.held_thread:
            self.arrived.set()
            assert self.release.wait(30), "never released"
        return self.original(*args, **kwargs)


@pytest.fixture
def held(
    opensearch_backend: OpenSearchRetrievalBackend, monkeypatch: pytest.MonkeyPatch
) -> Iterator[HeldBulk]:
    gate = HeldBulk(opensearch_backend)
    monkeypatch.setattr(opensearch_backend.client, "bulk", gate)
    yield gate
    gate.release.set()


def held_push(gate: HeldBulk, push: Callable[[], object]) -> tuple[threading.Thread, list[BaseException]]:
    """Start `push` in a thread whose bulk request waits at the gate; returns once it is waiting."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            push()
        except BaseException as exc:  # reported by the test
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    gate.held_thread = thread
    thread.start()
    assert gate.arrived.wait(30), "the push never reached its bulk request"
    return thread, errors


def finish(gate: HeldBulk, thread: threading.Thread, errors: list[BaseException]) -> None:
    gate.release.set()
    thread.join(60)
    assert not thread.is_alive() and not errors, errors


def indexed(backend: OpenSearchRetrievalBackend) -> dict[str, dict[str, Any]]:
    """Every chunk entry the index holds (markers aside): id -> source."""
    backend.refresh()
    body = {"size": 1000, "query": {"exists": {"field": "document_id"}}}
    return {
        h["_id"]: h["_source"]
        for h in backend.client.search(index=backend.names.chunks, body=body)["hits"]["hits"]
    }


def keyword_ids(backend: OpenSearchRetrievalBackend, tenant_id: int, text: str) -> set[int]:
    scope = SearchScope(tenant_id=tenant_id, principal_tokens=PUBLIC)
    return {h.chunk_id for h in backend.keyword_search(scope, text, ["english"], 10)}


def test_an_older_push_that_finishes_last_neither_restores_nor_deletes(
    opensearch_backend: OpenSearchRetrievalBackend, held: HeldBulk
) -> None:
    connector = ConnectorFactory.create()
    old = document_upsert(
        connector=connector, external_id="d", content="walrus colony census", is_public=True
    )
    document_id = old.document.pk
    index_reconcile(time_budget=None)
    thread, errors = held_push(held, lambda: documents_push(document_ids=[document_id], force=True))
    new = document_upsert(
        connector=connector, external_id="d", content="puffin burrow survey", is_public=True
    )
    documents_push(document_ids=[document_id])  # the newer push completes first
    finish(held, thread, errors)  # then the older one lands
    current = {str(pk) for pk in Chunk.objects.filter(document_id=document_id).values_list("pk", flat=True)}
    assert set(indexed(opensearch_backend)) == current
    assert keyword_ids(opensearch_backend, connector.tenant_id, "puffin burrow")
    assert not keyword_ids(opensearch_backend, connector.tenant_id, "walrus colony")
    assert new.document.pk == document_id and not Document.objects.get(pk=document_id).index_dirty


def test_a_push_that_lands_after_the_deletion_leaves_nothing_behind(
    opensearch_backend: OpenSearchRetrievalBackend, held: HeldBulk
) -> None:
    connector = ConnectorFactory.create()
    document = document_upsert(connector=connector, external_id="d", content="walrus colony", is_public=True)
    document_id = document.document.pk
    thread, errors = held_push(held, lambda: documents_push(document_ids=[document_id]))
    document_hard_delete(document_id=document_id)
    assert tombstones_push(document_ids=[document_id]).deleted == 1
    assert not IndexTombstone.objects.filter(document_id=document_id).exists()
    finish(held, thread, errors)
    assert indexed(opensearch_backend) == {}
    assert not keyword_ids(opensearch_backend, connector.tenant_id, "walrus colony")


def test_a_deletion_committed_while_a_rebuild_ran_still_reaches_the_new_generation(
    opensearch_backend: OpenSearchRetrievalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    connector = ConnectorFactory.create()
    document = document_upsert(connector=connector, external_id="d", content="walrus colony", is_public=True)
    keep = document_upsert(connector=connector, external_id="k", content="puffin burrow", is_public=True)
    index_reconcile(time_budget=None)
    started, commit = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def delete_in_a_long_transaction() -> None:
        try:
            with transaction.atomic():  # its tombstone's created_at is this moment, before the rebuild
                document_hard_delete(document_id=document.document.pk)
                started.set()
                assert commit.wait(30)
        except BaseException as exc:  # reported by the test
            errors.append(exc)
        finally:
            connection.close()

    deleter = threading.Thread(target=delete_in_a_long_transaction)
    deleter.start()
    assert started.wait(30)
    activate = opensearch_backend.activate_index_generation

    def commit_then_activate(generation: int) -> None:
        commit.set()  # the rebuild already copied the document: its read did not see the deletion
        deleter.join(30)
        activate(generation)

    monkeypatch.setattr(opensearch_backend, "activate_index_generation", commit_then_activate)
    index_rebuild()
    assert not errors, errors
    index_reconcile(time_budget=None)
    held_ids = {int(source["document_id"]) for source in indexed(opensearch_backend).values()}
    assert held_ids == {keep.document.pk}
    assert not keyword_ids(opensearch_backend, connector.tenant_id, "walrus colony")
