"""The admin writes through the services: edits re-chunk, adds chunk, deletes reach the index."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from knowledge.models import Chunk, Connector, Document, Tenant
from knowledge.pipeline.active import forget_active_embedder
from knowledge.search import search_chunks
from knowledge.services.connector_sync import connector_sync
from knowledge.services.documents import document_upsert
from retrieval_backends.registry import reset_backend
from retrieval_backends.types import SearchScope
from tests.embedding_stub import Fault, embedding_server
from tests.factories import ConnectorFactory, TenantFactory
from tests.knowledge.fake_backends import RecordingIndexBackend
from tests.plugins import plugin_options

pytestmark = pytest.mark.django_db


def _form(document: Document, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "title": document.title,
        "source_url": document.source_url,
        "content": document.content,
        "metadata": json.dumps(document.metadata),
        "language": document.language,
        "environment": "",
        "is_public": "on",
        "chunks-TOTAL_FORMS": "0",
        "chunks-INITIAL_FORMS": "0",
        "chunks-MIN_NUM_FORMS": "0",
        "chunks-MAX_NUM_FORMS": "1000",
    }
    return {**data, **changes}


def _public_search(tenant_id: int, text: str) -> list[str]:
    scope = SearchScope(tenant_id=tenant_id, principal_tokens=frozenset({"public"}))
    return [h.content for h in search_chunks(scope=scope, query_text=text, limit=10, lanes=("keyword",)).hits]


def test_an_admin_redaction_is_rechunked_and_the_old_text_is_gone(staff: Client) -> None:
    connector = ConnectorFactory.create()
    text = "The vault code is 4711. Lunch is at noon."
    document = document_upsert(connector=connector, external_id="memo", content=text, is_public=True).document
    assert _public_search(connector.tenant_id, "vault code")
    url = reverse("admin:knowledge_document_change", args=[document.pk])
    response = staff.post(url, _form(document, content="Lunch is at noon.", title="Memo"))
    assert response.status_code == 302, response.content.decode()[:2000]
    assert [c.content for c in Chunk.objects.filter(document=document)] == ["Memo\nLunch is at noon."]
    assert _public_search(connector.tenant_id, "vault code") == []
    document.refresh_from_db()
    assert not document.acl_overridden  # a content edit is not an ACL edit


def test_adding_a_document_in_the_admin_creates_its_chunks(staff: Client) -> None:
    connector = ConnectorFactory.create()
    data = {
        **_form(
            Document(title="New", content="freshly added words"), connector=connector.pk, external_id="n1"
        ),
        "language": "english",
        "metadata": "{}",
    }
    response = staff.post(reverse("admin:knowledge_document_add"), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    document = Document.objects.get(connector=connector, external_id="n1")
    assert document.chunks.count() == 1 and document.chunks.get().embeddings.count() == 1
    assert _public_search(connector.tenant_id, "freshly added")


def test_pulled_documents_content_is_read_only_and_cannot_be_added(staff: Client, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("alpha")
    connector = ConnectorFactory.create(kind="filesystem", config={"path": str(tmp_path)})
    connector_sync(connector=connector)
    document = Document.objects.get(connector=connector)
    page = staff.get(reverse("admin:knowledge_document_change", args=[document.pk])).content.decode()
    assert 'name="content"' not in page and "alpha" in page
    data = {**_form(Document(content="x"), connector=connector.pk, external_id="x"), "metadata": "{}"}
    response = staff.post(reverse("admin:knowledge_document_add"), data)
    assert response.status_code == 200 and "pull connector" in response.content.decode()


@pytest.fixture
def index() -> Iterator[type[RecordingIndexBackend]]:
    RecordingIndexBackend.states.clear()
    RecordingIndexBackend.deleted.clear()
    with override_settings(RETRIEVAL_BACKEND="tests.knowledge.fake_backends.RecordingIndexBackend"):
        reset_backend()
        yield RecordingIndexBackend
    reset_backend()


def test_admin_deletes_go_through_the_deletion_service(
    staff: Client, index: type[RecordingIndexBackend], django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    from config.celery import app

    app.conf.task_always_eager = True
    try:
        connector = ConnectorFactory.create()
        one, two, three = (
            document_upsert(connector=connector, external_id=n, content=f"text {n}").document for n in "abc"
        )
        with django_capture_on_commit_callbacks(execute=True):
            response = staff.post(reverse("admin:knowledge_document_delete", args=[one.pk]), {"post": "yes"})
        assert response.status_code == 302 and one.pk in index.deleted
        changelist = reverse("admin:knowledge_document_changelist")
        with django_capture_on_commit_callbacks(execute=True):
            staff.post(
                changelist,
                {"action": "delete_selected", "_selected_action": [two.pk, three.pk], "post": "yes"},
            )
        assert {two.pk, three.pk} <= index.deleted
        assert not Chunk.objects.filter(document__connector=connector).exists()
    finally:
        app.conf.task_always_eager = False


def test_deleting_a_connector_or_tenant_asks_first_then_uses_the_services(staff: Client) -> None:
    tenant = TenantFactory.create()
    connector = ConnectorFactory.create(tenant=tenant)
    document_upsert(connector=connector, external_id="a", content="alpha")
    url = reverse("admin:knowledge_connector_delete", args=[connector.pk])
    assert "Are you sure" in staff.get(url).content.decode()
    assert Connector.objects.filter(pk=connector.pk).exists()  # the confirmation page deletes nothing
    response = staff.post(url, {"post": "yes"})
    assert response.status_code == 302 and not Connector.objects.filter(pk=connector.pk).exists()
    assert not Chunk.objects.filter(tenant=tenant).exists()
    other = ConnectorFactory.create(tenant=tenant)
    document_upsert(connector=other, external_id="b", content="beta")
    staff.post(reverse("admin:knowledge_tenant_delete", args=[tenant.pk]), {"post": "yes"})
    assert (
        not Tenant.objects.filter(pk=tenant.pk).exists()
        and not Document.objects.filter(tenant=tenant).exists()
    )


def test_an_edit_while_the_embedding_api_is_down_saves_nothing_and_says_so(
    staff: Client,
    settings,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    with embedding_server() as server:
        settings.KNOWLEDGE_EMBEDDER = "openai"
        options = {"base_url": f"{server.root}/v1", "dimension": server.dimension, "max_retries": 0}
        plugin_options(settings, "embedder", "openai", **options)
        forget_active_embedder()
        try:
            connector = ConnectorFactory.create()
            text = "The vault code is 4711."
            document = document_upsert(connector=connector, external_id="memo", content=text, is_public=True)
            server.faults = [Fault(status=503, body={"error": "overloaded"})]
            url = reverse("admin:knowledge_document_change", args=[document.document.pk])
            response = staff.post(url, _form(document.document, content="Lunch is at noon."), follow=True)
            assert response.status_code == 200
            page = response.content.decode()
            assert "Nothing was saved: the embedding service failed (it is unavailable)" in page
            assert server.root not in page
            assert [c.content for c in Chunk.objects.filter(document=document.document)] == [text]
            assert Document.objects.get(pk=document.document.pk).content == text
        finally:
            forget_active_embedder()
