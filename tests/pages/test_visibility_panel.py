"""The "Who can see this?" panel on the document admin page."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client

from knowledge.models import Document
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client: Client) -> Client:
    call_command("seed_demo", verbosity=0, without_hosted=True)
    client.force_login(UserFactory.create())
    return client


def page(client: Client, external_id: str, **params: str) -> str:
    doc = Document.objects.get(tenant__slug="primary", external_id=external_id)
    response = client.get(f"/admin/knowledge/document/{doc.pk}/change/", params)
    assert response.status_code == 200
    return response.content.decode()


def test_lists_groups_with_members_and_direct_users(staff: Client) -> None:
    html = page(staff, "eng/oncall")
    assert 'id="who-can-see"' in html and 'href="#who-can-see"' in html
    assert "Group <code>engineering</code>" in html
    assert "<code>eli@example.com</code>, <code>erin@example.com</code>" in html
    assert "User <code>hana@example.com</code> (allowed directly)" in page(staff, "hr/salaries")
    assert "Everyone in tenant primary" in page(staff, "handbook/vacation")


def test_verdicts_for_a_chosen_user(staff: Client) -> None:
    assert "<strong>can see</strong>" in page(staff, "eng/oncall", visible_to="erin@example.com")
    assert "<strong>can see</strong>" in page(
        staff, "eng/oncall", visible_to=" Erin@Example.COM"
    )  # any spelling
    hidden = page(staff, "eng/oncall", visible_to="hana@example.com")
    assert "<strong>cannot see</strong>" in hidden and 'data-reason="acl"' in hidden
    wrong_env = page(staff, "eng/oncall", visible_to="erin@example.com", visible_in="staging")
    assert 'data-reason="environment"' in wrong_env and 'data-reason="acl"' not in wrong_env
    other_tenant = page(staff, "handbook/vacation", visible_to="sam@acme.example")
    assert 'data-reason="tenant"' in other_tenant and "acme" in other_tenant
    unknown = page(staff, "hr/salaries", visible_to="nobody@example.com")
    assert "no such user" in unknown and 'data-reason="acl"' in unknown
    assert "<strong>can see</strong>" in page(staff, "handbook/vacation", visible_to="nobody@example.com")


def test_bad_panel_input_is_explained_not_a_500(staff: Client) -> None:
    assert "unknown environment" in page(
        staff, "eng/oncall", visible_to="erin@example.com", visible_in="mars"
    )
    html = page(staff, "eng/oncall", visible_to="<script>x</script>")
    assert "<script>x</script>" not in html and "&lt;script&gt;" in html
    response = staff.get("/admin/knowledge/document/not-a-number/change/")
    assert response.status_code == 302  # the admin's "does not exist" redirect, not a crash
