"""Admin pages render for staff and are refused to everyone else."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db.models import Model
from django.test import Client
from django.urls import reverse

from knowledge.models import Chunk, ChunkEmbedding, Connector, Document, Environment, Principal, Tenant
from knowledge.services.documents import document_upsert
from tests.factories import ConnectorFactory, EnvironmentFactory, PrincipalFactory, UserFactory

pytestmark = pytest.mark.django_db
MODELS = [Tenant, Environment, Connector, Principal, Document, Chunk, ChunkEmbedding]


@pytest.fixture
def objects() -> dict[type, int]:
    connector = ConnectorFactory.create()
    EnvironmentFactory.create(tenant=connector.tenant)
    user = PrincipalFactory.create(tenant=connector.tenant)
    doc = document_upsert(
        connector=connector, external_id="x", title="X", content="hello", principals=[user]
    ).document
    chunk = doc.chunks.get()
    return {
        Tenant: connector.tenant_id,
        Environment: Environment.objects.filter(tenant=connector.tenant).get().pk,
        Connector: connector.pk,
        Principal: user.pk,
        Document: doc.pk,
        Chunk: chunk.pk,
        ChunkEmbedding: chunk.embeddings.get().pk,
    }


def _url(model: type[Model], view: str, *args: int) -> str:
    return reverse(f"admin:knowledge_{model._meta.model_name}_{view}", args=args)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_staff_sees_changelist_and_change_form(client: Client, objects: dict[type, int], model: type) -> None:
    client.force_login(UserFactory.create())
    assert client.get(_url(model, "changelist")).status_code == 200
    assert client.get(_url(model, "change", objects[model])).status_code == 200


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_non_staff_is_refused(client: Client, objects: dict[type, int], model: type) -> None:
    client.force_login(get_user_model().objects.create_user("plain", password="pw-123456"))
    for url in (_url(model, "changelist"), _url(model, "change", objects[model])):
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_anonymous_is_sent_to_login(client: Client) -> None:
    response = client.get(reverse("admin:index"))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_soft_deleted_filter_and_restore_action(client: Client, objects: dict[type, int]) -> None:
    client.force_login(UserFactory.create())
    doc_id = objects[Document]
    url = _url(Document, "changelist")
    client.post(url, {"action": "soft_delete", "_selected_action": [doc_id]})
    assert Document.objects.get(pk=doc_id).deleted_at is not None
    assert Chunk.objects.get(document_id=doc_id).is_deleted
    listed = client.get(url, {"deleted": "yes"}).content.decode()
    assert f"/{doc_id}/change/" in listed
    assert f"/{doc_id}/change/" not in client.get(url, {"deleted": "no"}).content.decode()
    client.post(url, {"action": "restore", "_selected_action": [doc_id]})
    assert Document.objects.get(pk=doc_id).deleted_at is None
    assert not Chunk.objects.get(document_id=doc_id).is_deleted


def test_editing_acl_in_admin_updates_chunk_tokens(client: Client, objects: dict[type, int]) -> None:
    client.force_login(UserFactory.create())
    doc = Document.objects.get(pk=objects[Document])
    other = PrincipalFactory.create(tenant=doc.tenant)
    data = {
        "tenant": doc.tenant_id,
        "connector": doc.connector_id,
        "external_id": doc.external_id,
        "title": doc.title,
        "source_url": "",
        "content": doc.content,
        "metadata": "{}",
        "language": "english",
        "environment": "",
        "is_public": "on",
        "allowed_principals": [other.pk],
        "chunks-TOTAL_FORMS": "1",
        "chunks-INITIAL_FORMS": "1",
        "chunks-MIN_NUM_FORMS": "0",
        "chunks-MAX_NUM_FORMS": "1000",
        "chunks-0-id": doc.chunks.get().pk,
        "chunks-0-document": doc.pk,
    }
    response = client.post(_url(Document, "change", doc.pk), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert sorted(Chunk.objects.get(document=doc).acl_tokens) == sorted(["public", f"u:{other.pk}"])


def test_connector_form_shows_config_errors(client: Client) -> None:
    client.force_login(UserFactory.create())
    tenant = Tenant.objects.get(slug="primary")
    response = client.post(
        _url(Connector, "add"),
        {
            "tenant": tenant.pk,
            "name": "docs",
            "kind": "filesystem",
            "config": '{"path": "relative"}',
            "enabled": "on",
            "sync_interval": "01:00:00",
        },
    )
    assert response.status_code == 200
    assert "absolute directory path" in response.content.decode()
    assert not Connector.objects.filter(name="docs").exists()
