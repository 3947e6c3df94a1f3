"""The staff pages check model permissions, not just is_staff: searching as a user, bypassing ACLs and
reading eval reports are permissions of their own, granted to superusers and to chosen groups."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client

from knowledge.models import Principal
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
URL = "/playground/"


@pytest.fixture
def seeded(db: None) -> None:
    from django.core.management import call_command

    call_command("seed_demo", verbosity=0, without_hosted=True)


def staff_with(*codenames: str, via_group: bool = False) -> User:
    user = UserFactory.create(is_superuser=False)
    permissions = list(Permission.objects.filter(content_type__app_label="knowledge", codename__in=codenames))
    assert len(permissions) == len(codenames)
    if via_group:
        group = Group.objects.create(name=f"searchers-{user.pk}")
        group.permissions.set(permissions)
        user.groups.add(group)
    else:
        user.user_permissions.set(permissions)
    return user


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def erin() -> str:
    return f"user:{Principal.objects.get(tenant__slug='primary', external_id='erin@example.com').pk}"


def identity_values(client: Client) -> set[str]:
    field = client.get(URL).context["form"].fields["identity"]
    values: set[str] = set()
    for value, label in field.choices:
        values |= {v for v, _ in label} if isinstance(label, list | tuple) else {value}
    return values


def test_a_staff_user_without_permissions_gets_403_everywhere(
    seeded: None, tmp_path: Path, settings: Any
) -> None:
    settings.KNOWLEDGE_EVAL_REPORTS_DIR = tmp_path
    (tmp_path / "run.md").write_text("# Retrieval evaluation: x\n\n| config | ndcg |\n|---|---|\n| a | 1 |\n")
    client = logged_in(staff_with())
    for url in (URL, f"{URL}?q=salary&tenant=primary&identity=bypass", "/evals/", "/evals/run/"):
        assert client.get(url).status_code == 403, url
    page = client.get("/admin/").content.decode()
    assert "Search playground" not in page and "Eval reports" not in page


def test_viewing_documents_opens_public_only_searches(seeded: None) -> None:
    client = logged_in(staff_with("view_document"))
    assert identity_values(client) == {"public"}
    response = client.get(URL, {"q": "salary bands", "tenant": "primary", "identity": "public"})
    assert response.status_code == 200 and response.context["outcome"] is not None
    assert "Salary bands 2026" not in [h.hit.title for h in response.context["outcome"].hits]
    for identity in ("bypass", erin()):
        denied = client.get(URL, {"q": "salary bands", "tenant": "primary", "identity": identity})
        assert denied.status_code == 403
    assert "Search playground" in client.get("/admin/").content.decode()


def test_searching_as_a_user_and_bypassing_are_separate_permissions(seeded: None) -> None:
    as_user = logged_in(staff_with("view_document", "search_as_user"))
    values = identity_values(as_user)
    assert "bypass" not in values and erin() in values
    assert as_user.get(URL, {"q": "x", "tenant": "primary", "identity": erin()}).status_code == 200
    assert as_user.get(URL, {"q": "x", "tenant": "primary", "identity": "bypass"}).status_code == 403
    bypass = logged_in(staff_with("view_document", "search_bypass_acl", via_group=True))
    assert identity_values(bypass) == {"public", "bypass"}
    hits = bypass.get(URL, {"q": "salary bands", "tenant": "primary", "identity": "bypass"}).context[
        "outcome"
    ]
    assert hits.hits[0].hit.title == "Salary bands 2026"


def test_keyword_scores_in_the_playground_follow_the_api_rule(seeded: None, settings: Any) -> None:
    query = {"q": "vacation days", "tenant": "primary", "identity": erin()}

    def top_hit(client: Client) -> Any:
        return client.get(URL, query).context["outcome"].hits[0].hit

    as_user = top_hit(logged_in(staff_with("view_document", "search_as_user")))
    may_bypass = top_hit(logged_in(staff_with("view_document", "search_as_user", "search_bypass_acl")))
    assert as_user.chunk_id == may_bypass.chunk_id and as_user.lane_ranks == may_bypass.lane_ranks
    assert as_user.text_rank is None and may_bypass.text_rank is not None and may_bypass.text_rank > 0
    settings.KNOWLEDGE_KEYWORD_SCORES = "everyone"
    assert top_hit(logged_in(staff_with("view_document", "search_as_user"))).text_rank == may_bypass.text_rank


def test_eval_reports_need_their_permission_and_every_decision_is_logged(
    seeded: None, caplog: pytest.LogCaptureFixture, tmp_path: Path, settings: Any
) -> None:
    settings.KNOWLEDGE_EVAL_REPORTS_DIR = tmp_path
    reader = staff_with("view_eval_reports")
    client = logged_in(reader)
    with caplog.at_level(logging.INFO, logger="knowledge.pages.access"):
        assert client.get("/evals/").status_code == 200
        assert client.get(URL).status_code == 403
    lines = [r.getMessage() for r in caplog.records if r.name == "knowledge.pages.access"]
    assert f"staff page: {reader.username} may read the eval reports (knowledge.view_eval_reports)" in lines
    assert (
        f"staff page: {reader.username} may not use the search playground (knowledge.view_document)" in lines
    )


def test_superusers_have_every_page_permission(seeded: None) -> None:
    client = logged_in(UserFactory.create())
    assert {"public", "bypass", erin()} <= identity_values(client)
    assert client.get("/evals/").status_code == 200
