"""The connector admin with a source credential: sealed at rest, masked on the page, kept, replaced or
cleared; fields that do not apply to a kind are not asked for."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from knowledge.models import Connector
from tests.factories import ConnectorFactory
from tests.knowledge.sources.helpers import source_connector

pytestmark = pytest.mark.django_db
SECRET = "ghp_0123456789abcdefSECRETwxyz"


def github() -> Connector:
    return source_connector("github", {"repository": "acme/handbook"}, SECRET)


def change_url(connector: Connector) -> str:
    return reverse("admin:knowledge_connector_change", args=[connector.pk])


def post(staff: Client, connector: Connector, **fields: Any) -> Any:
    data = {
        "name": connector.name,
        "config": json.dumps(connector.config),
        "enabled": "on",
        "sync_interval": "01:00:00",
        "runs-TOTAL_FORMS": "0",
        "runs-INITIAL_FORMS": "0",
        **fields,
    }
    return staff.post(change_url(connector), data)


def test_the_change_page_shows_the_credential_masked_and_never_whole(staff: Client) -> None:
    connector = github()
    page = staff.get(change_url(connector)).content.decode()
    assert SECRET not in page
    assert SECRET[-4:] in page and "••••" in page
    assert 'name="credential"' in page and f'value="{SECRET}"' not in page


def test_a_blank_credential_keeps_the_stored_one_and_a_new_one_is_sealed(staff: Client) -> None:
    connector = github()
    assert post(staff, connector, credential="").status_code == 302
    assert Connector.objects.get(pk=connector.pk).credential() == SECRET
    assert post(staff, connector, credential="ghp_replacement_9876").status_code == 302
    stored = Connector.objects.values_list("credential_sealed", flat=True).get(pk=connector.pk)
    assert "ghp_replacement_9876" not in stored
    assert Connector.objects.get(pk=connector.pk).credential() == "ghp_replacement_9876"


def test_clearing_the_credential_removes_it(staff: Client) -> None:
    connector = github()
    assert post(staff, connector, clear_credential="on").status_code == 302
    assert Connector.objects.get(pk=connector.pk).credential_sealed == ""


def test_a_kind_without_a_credential_neither_asks_for_nor_takes_one(staff: Client, tmp_path: Any) -> None:
    connector = ConnectorFactory.create(kind="filesystem", config={"path": str(tmp_path)})
    assert 'name="credential"' not in staff.get(change_url(connector)).content.decode()
    assert post(staff, connector, credential="hunter2").status_code == 302  # not a field of this form
    assert Connector.objects.get(pk=connector.pk).credential_sealed == ""
    add = staff.post(
        reverse("admin:knowledge_connector_add"),
        {
            "tenant": connector.tenant_id,
            "name": "second folder",
            "kind": "filesystem",
            "config": json.dumps({"path": str(tmp_path)}),
            "credential": "hunter2",
            "sync_interval": "01:00:00",
            "runs-TOTAL_FORMS": "0",
            "runs-INITIAL_FORMS": "0",
        },
    )
    assert "A filesystem connector takes no credential." in add.content.decode()
    assert not Connector.objects.filter(name="second folder").exists()


def test_the_permission_interval_is_asked_only_of_kinds_that_sync_permissions(
    staff: Client, tmp_path: Any
) -> None:
    folder = ConnectorFactory.create(kind="filesystem", config={"path": str(tmp_path)})
    assert 'name="permission_sync_interval"' not in staff.get(change_url(folder)).content.decode()
    connector = github()
    assert 'name="permission_sync_interval"' in staff.get(change_url(connector)).content.decode()
    assert post(staff, connector, permission_sync_interval="").status_code == 302  # blank: the default
    assert Connector.objects.get(pk=connector.pk).permission_sync_interval == timedelta(minutes=10)
    assert post(staff, connector, permission_sync_interval="00:05:00").status_code == 302
    assert Connector.objects.get(pk=connector.pk).permission_sync_interval == timedelta(minutes=5)
    response = post(staff, connector, permission_sync_interval="00:00:10")
    assert "Must be between a minute and a year." in response.content.decode()
