"""ACL changes and deletions reach an external index through the Celery task, idempotently."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings

from config.celery import app
from knowledge.services.documents import (
    document_hard_delete,
    document_set_acl,
    document_soft_delete,
    document_upsert,
)
from knowledge.services.index_sync import documents_index_sync
from retrieval_backends.registry import reset_backend
from tests.factories import ConnectorFactory, GroupFactory
from tests.knowledge.fake_backends import RecordingIndexBackend

pytestmark = pytest.mark.django_db


@pytest.fixture
def index() -> Iterator[type[RecordingIndexBackend]]:
    RecordingIndexBackend.states.clear()
    RecordingIndexBackend.deleted.clear()
    app.conf.task_always_eager = True
    path = "tests.knowledge.fake_backends.RecordingIndexBackend"
    with override_settings(RETRIEVAL_BACKEND={"BACKEND": path, "OPTIONS": {}}):
        reset_backend()
        yield RecordingIndexBackend
    app.conf.task_always_eager = False


def test_acl_soft_delete_and_delete_are_pushed_on_commit(index, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    connector = ConnectorFactory.create()
    with django_capture_on_commit_callbacks(execute=True):
        document = document_upsert(connector=connector, external_id="d", content="text").document
    assert index.states[document.pk].acl_tokens == ()
    group = GroupFactory.create(tenant=connector.tenant)
    with django_capture_on_commit_callbacks(execute=True):
        document_set_acl(document=document, is_public=True, principals=[group])
    assert index.states[document.pk].acl_tokens == tuple(sorted(["public", group.acl_token]))
    with django_capture_on_commit_callbacks(execute=True):
        document_soft_delete(document=document)
    assert index.states[document.pk].is_deleted
    with django_capture_on_commit_callbacks(execute=True):
        document_hard_delete(document_id=document.pk)
    assert document.pk in index.deleted and document.pk not in index.states


def test_retrying_a_sync_converges_on_the_same_state(index) -> None:  # type: ignore[no-untyped-def]
    connector = ConnectorFactory.create()
    document = document_upsert(connector=connector, external_id="d", content="text", is_public=True).document
    first = documents_index_sync(document_ids=[document.pk, 10**12])
    snapshot = (dict(index.states), set(index.deleted))
    assert documents_index_sync(document_ids=[document.pk, 10**12]) == first == {"synced": 1, "deleted": 1}
    assert (dict(index.states), set(index.deleted)) == snapshot
