"""Admin inputs the database or Python would choke on are form errors on the page, never a 500."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from knowledge.models import Connector, Document
from knowledge.services.connector_sync import connectors_due
from knowledge.services.documents import document_upsert
from tests.factories import ConnectorFactory, EnvironmentFactory

pytestmark = pytest.mark.django_db


def _connector_form(connector: Connector, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "name": connector.name,
        "config": json.dumps(connector.config),
        "enabled": "on",
        "sync_interval": "01:00:00",
        **{f"runs-{k}": v for k, v in (("TOTAL_FORMS", "0"), ("INITIAL_FORMS", "0"))},
    }
    return {**data, **changes}


def _errors(response: object) -> str:
    assert response.status_code == 200, response.status_code  # type: ignore[attr-defined]
    page = response.content.decode()  # type: ignore[attr-defined]
    assert "errorlist" in page, page[:3000]
    return page


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('{"path": "/tmp/\\u0000x"}', "Null characters are not allowed."),
        ('{"path": "/tmp/\\ud800"}', "Surrogate characters are not allowed."),
        ("[" * 3000 + "]" * 3000, "Nested too deeply."),
    ],
)
def test_connector_config_the_database_refuses_is_a_form_error(
    staff: Client, tmp_path: Path, config: str, message: str
) -> None:
    connector = ConnectorFactory.create(kind="filesystem", config={"path": str(tmp_path)})
    url = reverse("admin:knowledge_connector_change", args=[connector.pk])
    assert message in _errors(staff.post(url, _connector_form(connector, config=config)))
    connector.refresh_from_db()
    assert connector.config == {"path": str(tmp_path)}


def test_a_duplicate_connector_name_is_a_form_error(staff: Client, tmp_path: Path) -> None:
    first = ConnectorFactory.create(name="docs")
    second = ConnectorFactory.create(tenant=first.tenant, kind="filesystem", config={"path": str(tmp_path)})
    url = reverse("admin:knowledge_connector_change", args=[second.pk])
    page = _errors(staff.post(url, _connector_form(second, name="docs")))
    assert "The tenant already has a connector of this name." in page


def test_a_sync_interval_beyond_a_year_is_a_form_error(staff: Client, tmp_path: Path) -> None:
    connector = ConnectorFactory.create(kind="filesystem", config={"path": str(tmp_path)})
    url = reverse("admin:knowledge_connector_change", args=[connector.pk])
    page = _errors(staff.post(url, _connector_form(connector, sync_interval="999999999 00:00:00")))
    assert "Must be at most a year." in page


def test_one_huge_interval_in_the_database_does_not_stop_the_schedule(tmp_path: Path) -> None:
    huge = ConnectorFactory.create(kind="filesystem", config={"path": str(tmp_path)})
    due = ConnectorFactory.create(kind="filesystem", config={"path": str(tmp_path)})
    Connector.objects.filter(pk=huge.pk).update(
        sync_interval=timedelta(days=999_999_999), last_synced_at=timezone.now()
    )
    Connector.objects.filter(pk=due.pk).update(last_synced_at=timezone.now() - timedelta(days=2))
    assert connectors_due() == [due.pk]


def test_document_metadata_that_is_not_an_object_is_a_form_error(staff: Client) -> None:
    connector = ConnectorFactory.create()
    document = document_upsert(connector=connector, external_id="m", content="text", is_public=True).document
    url = reverse("admin:knowledge_document_change", args=[document.pk])
    form = {
        "title": "",
        "source_url": "",
        "content": "text",
        "language": document.language,
        "environment": "",
        "is_public": "on",
        **{f"chunks-{k}": v for k, v in (("TOTAL_FORMS", "0"), ("INITIAL_FORMS", "0"))},
    }
    assert "Must be a JSON object" in _errors(staff.post(url, {**form, "metadata": "[1, 2]"}))
    assert "Surrogate characters are not allowed." in _errors(
        staff.post(url, {**form, "metadata": '{"k": "\\ud800"}'})
    )
    assert Document.objects.get(pk=document.pk).metadata == {}


def test_sync_now_on_a_disabled_connector_says_it_was_not_synced(staff: Client, tmp_path: Path) -> None:
    connector = ConnectorFactory.create(kind="filesystem", config={"path": str(tmp_path)}, enabled=False)
    data = {"action": "sync_now", "_selected_action": [connector.pk]}
    response = staff.post(reverse("admin:knowledge_connector_changelist"), data, follow=True)
    page = response.content.decode()
    assert f"Not synced, disabled (enable them first): {connector}." in page
    assert "queued" not in page


def test_sync_now_on_an_api_connector_says_there_is_nothing_to_sync(staff: Client, tmp_path: Path) -> None:
    api = ConnectorFactory.create()
    folder = ConnectorFactory.create(
        tenant=api.tenant, name="folder", kind="filesystem", config={"path": str(tmp_path)}
    )
    data = {"action": "sync_now", "_selected_action": [api.pk, folder.pk]}
    response = staff.post(reverse("admin:knowledge_connector_changelist"), data, follow=True)
    page = response.content.decode()
    assert f"Nothing to sync for {api}: documents arrive through the API, not a sync." in page
    assert "of 1 pull connector sync(s) queued." in page  # the folder's, whether or not a broker runs
    only_api = staff.post(
        reverse("admin:knowledge_connector_changelist"), {**data, "_selected_action": [api.pk]}, follow=True
    ).content.decode()
    assert "Nothing to sync for" in only_api and "queued" not in only_api


def test_a_documents_environment_choices_are_its_tenants(staff: Client) -> None:
    connector = ConnectorFactory.create()
    own = EnvironmentFactory.create(tenant=connector.tenant, slug="staging")
    other = EnvironmentFactory.create(slug="production")
    document = document_upsert(connector=connector, external_id="e", content="text", is_public=True).document
    page = staff.get(reverse("admin:knowledge_document_change", args=[document.pk])).content.decode()
    assert f'<option value="{own.pk}">' in page and f'<option value="{other.pk}">' not in page


@pytest.mark.parametrize(
    "object_id", ["%C2%B2", "%D9%A3", "99999999999999999999999", "-1", "1e3", "%00", "x"]
)
def test_odd_object_ids_in_admin_urls_are_not_found_never_a_500(staff: Client, object_id: str) -> None:
    from django.contrib import admin

    for model in admin.site._registry:
        meta = model._meta
        for view in ("change", "delete", "history"):
            url = f"/admin/{meta.app_label}/{meta.model_name}/{object_id}/{view}/"
            response = staff.get(url)
            assert response.status_code in (302, 403, 404), (url, response.status_code)
