"""The change log in PostgreSQL, pushes of absolute state, and the reconciler (in-process backend)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings

from knowledge.models import Document, IndexTombstone
from knowledge.services.deletion import connector_purge
from knowledge.services.documents import (
    document_hard_delete,
    document_restore,
    document_set_acl,
    document_soft_delete,
    document_upsert,
)
from knowledge.services.index_sync import documents_push, index_reconcile, index_status
from knowledge.services.reindex import reindex_backfill, reindex_job_for, reindex_switch
from retrieval_backends.base import BackendUnavailable
from retrieval_backends.registry import reset_backend
from tests.factories import ConnectorFactory, EnvironmentFactory, GroupFactory
from tests.knowledge.fake_backends import RecordingIndexBackend

pytestmark = pytest.mark.django_db(transaction=True)  # versions bump once per transaction
INDEX = "tests.knowledge.fake_backends.RecordingIndexBackend"


@pytest.fixture
def index() -> Iterator[type[RecordingIndexBackend]]:
    RecordingIndexBackend.reset()
    with override_settings(RETRIEVAL_BACKEND=INDEX):
        reset_backend()
        yield RecordingIndexBackend
    RecordingIndexBackend.reset()
    reset_backend()


def version(document: Document) -> tuple[int, int]:
    document.refresh_from_db()
    return document.index_version, document.synced_version


def test_every_mirrored_change_bumps_the_version_in_its_own_transaction(index: Any) -> None:
    connector = ConnectorFactory.create()
    document = document_upsert(connector=connector, external_id="d", content="text").document
    group = GroupFactory.create(tenant=connector.tenant)
    environment = EnvironmentFactory.create(tenant=connector.tenant)
    seen = [version(document)[0]]
    changes = [
        lambda: document_set_acl(document=document, is_public=True, principals=[group]),
        lambda: document_upsert(
            connector=connector, external_id="d", content="text", environment=environment
        ),
        lambda: document_soft_delete(document=document),
        lambda: document_restore(document=document),
        lambda: document_upsert(
            connector=connector, external_id="d", content="new text", environment=environment
        ),
        lambda: document_upsert(
            connector=connector,
            external_id="d",
            content="new text",
            embedding=[0.1] * 384,
            environment=environment,
        ),
    ]
    for change in changes:
        change()
        seen.append(version(document)[0])
    assert seen == sorted(seen) and len(set(seen)) == len(seen), seen
    unchanged = version(document)
    document_upsert(connector=connector, external_id="d", content="text b", environment=environment)
    document_upsert(connector=connector, external_id="d", content="text b", environment=environment)
    assert version(document)[0] > unchanged[0]
    settled = version(document)[0]
    document_upsert(connector=connector, external_id="d", content="text b", environment=environment)
    assert version(document)[0] == settled  # nothing changed, nothing to push


def test_the_reconciler_pushes_absolute_state_and_marks_clean(index: Any) -> None:
    connector = ConnectorFactory.create()
    group = GroupFactory.create(tenant=connector.tenant)
    documents = [
        document_upsert(
            connector=connector, external_id=f"d{i}", content=f"t{i}", principals=[group]
        ).document
        for i in range(5)
    ]
    assert index_status().dirty >= 5
    stats = index_reconcile(batch_size=2)
    assert stats.ran and stats.pushed >= 5 and stats.batches >= 3
    assert not index_status().pending
    for document in documents:
        assert index.states[document.pk].acl_tokens == (group.acl_token,)
        assert version(document)[0] == version(document)[1]
    assert index_reconcile().pushed == 0  # nothing dirty: nothing pushed


def test_a_change_made_during_a_push_keeps_the_document_dirty(
    index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    connector = ConnectorFactory.create()
    document = document_upsert(connector=connector, external_id="d", content="text").document
    original = RecordingIndexBackend.sync_document_access

    def push_then_change(self: Any, states: Any) -> dict[int, str]:
        result = original(self, states)
        with connection.cursor() as cursor:  # an ACL change commits while the push is in flight
            cursor.execute("UPDATE knowledge_document SET is_public = TRUE WHERE id = %s", [document.pk])
        return result

    monkeypatch.setattr(RecordingIndexBackend, "sync_document_access", push_then_change)
    documents_push(document_ids=[document.pk])
    current, synced = version(document)
    assert synced < current and index.states[document.pk].acl_tokens == ()
    monkeypatch.setattr(RecordingIndexBackend, "sync_document_access", original)
    index_reconcile()
    assert index.states[document.pk].acl_tokens == ("public",) and not index_status().pending


def test_a_reindex_or_repush_never_blanks_acl_fields(index: Any) -> None:
    connector = ConnectorFactory.create()
    group = GroupFactory.create(tenant=connector.tenant)
    document = document_upsert(
        connector=connector, external_id="d", content="text", principals=[group]
    ).document
    index_reconcile()
    job = reindex_job_for(spec="tests.knowledge.plugins.Hashing256Embedder")
    reindex_backfill(job=job)
    reindex_switch(job=job)
    document_upsert(connector=connector, external_id="d", content="text again", principals=[group])
    index_reconcile()
    assert index.states[document.pk].acl_tokens == (group.acl_token,)
    assert index.pushes[document.pk] >= 2


def test_a_document_that_always_fails_is_recorded_and_does_not_loop(index: Any) -> None:
    connector = ConnectorFactory.create()
    bad, good = (
        document_upsert(connector=connector, external_id=n, content=n).document for n in ("bad", "good")
    )
    index.failing.add(bad.pk)
    stats = index_reconcile(time_budget=5.0)
    assert stats.failed == 1 and stats.seconds < 5.0  # the back-off takes it out of this run
    bad.refresh_from_db()
    assert bad.index_dirty and "mapping rejected" in bad.sync_error and bad.sync_retry_at is not None
    assert good.pk in index.states and index_status().failing == 1
    index.failing.clear()
    Document.objects.filter(pk=bad.pk).update(sync_retry_at=None)  # as if the back-off elapsed
    index_reconcile()
    bad.refresh_from_db()
    assert not bad.index_dirty and bad.sync_error == "" and not index_status().pending


def test_an_unavailable_index_stops_the_run_and_loses_nothing(index: Any) -> None:
    connector = ConnectorFactory.create()
    document = document_upsert(connector=connector, external_id="d", content="text").document
    index.unavailable = True
    with pytest.raises(BackendUnavailable):
        index_reconcile()
    assert version(document)[1] == 0 and index_status().dirty >= 1
    index.unavailable = False
    index_reconcile()
    assert document.pk in index.states and not index_status().pending


def test_every_deletion_path_leaves_a_tombstone_until_the_index_confirms(index: Any) -> None:
    connector = ConnectorFactory.create()
    ids = [
        document_upsert(connector=connector, external_id=f"d{i}", content="x").document.pk for i in range(4)
    ]
    index_reconcile()
    document_hard_delete(document_id=ids[0])  # the service
    Document.objects.filter(pk=ids[1]).delete()  # an ORM delete behind the services' back
    other = ConnectorFactory.create(tenant=connector.tenant)
    stray = document_upsert(connector=other, external_id="s", content="x").document.pk
    other.delete()  # an ORM cascade
    assert set(IndexTombstone.objects.values_list("document_id", flat=True)) == {ids[0], ids[1], stray}
    connector_purge(connector=connector)
    assert index_status().tombstones == 5
    index_reconcile()
    assert {ids[0], ids[1], ids[2], ids[3], stray} <= index.deleted and not index_status().pending


def test_postgres_needs_no_push_but_the_log_is_still_drained() -> None:
    connector = ConnectorFactory.create()
    document = document_upsert(connector=connector, external_id="d", content="text").document
    document_hard_delete(
        document_id=document_upsert(connector=connector, external_id="e", content="x").document.pk
    )
    assert index_status().pending
    index_reconcile()
    assert not index_status().pending and version(document)[0] == version(document)[1]


def test_the_reconciler_runs_once_at_a_time(index: Any) -> None:
    import psycopg

    from knowledge.services.index_sync.reconcile import LOCK_KEY

    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as other:  # another worker holding the lock
        other.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        assert not index_reconcile().ran
        other.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])
        assert index_reconcile().ran
