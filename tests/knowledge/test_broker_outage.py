"""A Redis outage never fails a write: the change waits in PostgreSQL and reaches the index later."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client, override_settings
from django.urls import reverse
from rest_framework.test import APIClient

from knowledge.models import Document
from knowledge.services.index_sync import index_reconcile, index_status
from retrieval_backends.registry import reset_backend
from tests.api.conftest import bearer, issue_key
from tests.brokers import PrivateRedis, broker_at
from tests.factories import ConnectorFactory, TenantFactory, UserFactory
from tests.knowledge.admin_forms import post_document_action, post_document_change
from tests.knowledge.fake_backends import RecordingIndexBackend

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broker() -> Iterator[PrivateRedis]:
    server = PrivateRedis()
    server.start()
    RecordingIndexBackend.reset()
    with (
        broker_at(server.url),
        override_settings(RETRIEVAL_BACKEND="tests.knowledge.fake_backends.RecordingIndexBackend"),
    ):
        reset_backend()
        yield server
    server.stop()
    reset_backend()


def timed(call: Any) -> tuple[Any, float]:
    started = time.monotonic()
    return call(), time.monotonic() - started


def test_writes_succeed_with_the_broker_down_and_sync_after_it_returns(broker: PrivateRedis) -> None:
    tenant = TenantFactory.create()
    api = APIClient()
    api.credentials(**bearer(issue_key(tenant=tenant)))
    body = {"id": "d", "content": "harbour ferry", "acl": {"public": True}}
    assert api.post("/api/v1/index", body, format="json").status_code == 201
    assert broker.queued() == 1  # with the broker up, the push is enqueued at commit

    broker.stop()
    (response, seconds) = timed(lambda: api.post("/api/v1/index", {**body, "content": "new"}, format="json"))
    assert response.status_code == 201 and seconds < 3
    document = Document.objects.get(tenant=tenant, external_id="d")
    admin = Client()
    admin.force_login(UserFactory.create())
    post_document_change(admin, document, is_public=False)
    post_document_action(admin, "soft_delete", document)
    other = api.post("/api/v1/index", {"id": "e", "content": "to delete"}, format="json")
    assert other.status_code == 201
    assert api.delete("/api/v1/documents/e").status_code == 204
    status = index_status()
    assert status.dirty >= 1 and status.tombstones >= 1

    broker.start()
    index_reconcile()
    state = RecordingIndexBackend.states[document.pk]
    assert state.acl_tokens == () and state.is_deleted
    assert not index_status().pending


def test_sync_now_with_the_broker_down_answers_at_once(broker: PrivateRedis, tmp_path: Path) -> None:
    """The admin's "Sync now" tries the broker once: with Redis down it says so within seconds (the
    result store's reconnect policy once held the page for 19 s)."""
    connector = ConnectorFactory.create(kind="filesystem", config={"path": str(tmp_path)})
    admin = Client()
    admin.force_login(UserFactory.create())
    data = {"action": "sync_now", "_selected_action": [connector.pk]}
    url = reverse("admin:knowledge_connector_changelist")
    broker.stop()
    (response, seconds) = timed(lambda: admin.post(url, data, follow=True))
    page = response.content.decode()
    assert "0 of 1 pull connector sync(s) queued." in page and "task queue is unavailable" in page
    assert seconds < 5

    broker.start()
    assert "1 of 1 pull connector sync(s) queued." in admin.post(url, data, follow=True).content.decode()
    assert broker.queued("bulk") == 1
