"""An admin's soft delete and ACL override outlive a prune and the document's return: they are kept by
(connector, external id) and applied again when the source brings the document back, whatever made
it go (a file removed or briefly empty, a page that answered 404 once, turned noindex, became
disallowed by robots.txt or changed to an unsupported type, a DELETE through the API)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from knowledge.models import Connector, Document, DocumentPolicy, Principal
from knowledge.services.connector_sync import connector_sync
from knowledge.services.documents import document_set_acl, document_soft_delete
from tests.api.conftest import client_for, issue_key
from tests.factories import ConnectorFactory, PrincipalFactory
from tests.knowledge.admin_forms import post_document_action, post_policy_action
from tests.knowledge.connectors.site import Site, article, serve

pytestmark = pytest.mark.django_db


def decide(document: Document, *, narrow_to: Principal | None = None, delete: bool = False) -> None:
    if narrow_to is not None:
        document_set_acl(document=document, is_public=False, principals=[narrow_to], actor="admin:ann")
    if delete:
        document_soft_delete(document=document, actor="admin:ann")


def state(connector: Connector, external_id: str) -> tuple[bool, list[str], str] | None:
    document = Document.objects.filter(connector=connector, external_id=external_id).first()
    if document is None:
        return None
    grants = sorted(document.allowed_principals.values_list("external_id", flat=True))
    return document.is_public, grants, document.deletion_origin


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "plan.md").write_text("# Plan\nthe quarterly plan")
    (tmp_path / "other.md").write_text("# Other\nkeeps the listing non-empty")
    return tmp_path


@pytest.mark.parametrize("how", ["removed", "emptied"])
def test_a_files_admin_decisions_survive_its_prune_and_return(folder: Path, how: str) -> None:
    connector = ConnectorFactory.create(
        kind="filesystem", config={"path": str(folder)}, default_is_public=True
    )
    connector_sync(connector=connector)
    erin = PrincipalFactory.create(tenant=connector.tenant, external_id="erin@example.com")
    decide(Document.objects.get(connector=connector, external_id="plan.md"), narrow_to=erin, delete=True)
    if how == "removed":
        (folder / "plan.md").unlink()
    else:
        (folder / "plan.md").write_text("")
    assert connector_sync(connector=connector).deleted == 1
    assert state(connector, "plan.md") is None
    (folder / "plan.md").write_text("# Plan\nthe quarterly plan, back")
    connector_sync(connector=connector)
    assert state(connector, "plan.md") == (False, ["erin@example.com"], "admin")
    document = Document.objects.get(connector=connector, external_id="plan.md")
    assert (
        document.acl_override_by == "admin:ann" and document.source_is_public
    )  # the source's ACL is kept too


@pytest.fixture
def site() -> Iterator[Site]:
    with serve(Site()) as running:
        running.pages["/robots.txt"] = "User-agent: *\nDisallow: /private/\n"
        running.pages["/"] = article("Home", "The start page.")
        running.pages["/page.html"] = article("Page", "A page an admin narrowed and hid.")
        yield running


def web_connector(site: Site) -> Connector:
    config = {
        "urls": [f"{site.origin}/", f"{site.origin}/page.html"],
        "delay_seconds": 0,
        "timeout_seconds": 2,
    }
    return ConnectorFactory.create(kind="web", config=config, default_is_public=True)


def _as_image(site: Site) -> None:
    """A new representation, so a new validator (the crawler asks with the stored ETag)."""
    site.content_types["/page.html"] = "image/png"
    site.pages["/page.html"] = "\x89PNG image bytes"


GONE: dict[str, Callable[[Site], None]] = {
    "404 once": lambda site: site.statuses.__setitem__("/page.html", 404),
    "noindex": lambda site: site.pages.__setitem__(
        "/page.html", '<html><head><meta name="robots" content="noindex"></head><body>x</body></html>'
    ),
    "robots": lambda site: site.pages.__setitem__("/robots.txt", "User-agent: *\nDisallow: /page.html\n"),
    "unsupported type": _as_image,
}


@pytest.mark.parametrize("how", list(GONE))
def test_a_pages_admin_decisions_survive_its_prune_and_return(site: Site, how: str) -> None:
    connector = web_connector(site)
    connector_sync(connector=connector)
    url = f"{site.origin}/page.html"
    lee = PrincipalFactory.create(tenant=connector.tenant, external_id="lee@example.com")
    decide(Document.objects.get(connector=connector, external_id=url), narrow_to=lee, delete=True)
    original = (dict(site.pages), dict(site.statuses), dict(site.content_types))
    GONE[how](site)
    connector_sync(connector=connector)
    assert state(connector, url) is None
    site.pages, site.statuses, site.content_types = original
    connector_sync(connector=connector)
    assert state(connector, url) == (False, ["lee@example.com"], "admin")


def test_a_delete_through_the_api_keeps_the_admins_decisions(folder: Path) -> None:
    connector = ConnectorFactory.create(
        kind="filesystem", config={"path": str(folder)}, default_is_public=True
    )
    connector_sync(connector=connector)
    erin = PrincipalFactory.create(tenant=connector.tenant, external_id="erin@example.com")
    decide(Document.objects.get(connector=connector, external_id="plan.md"), narrow_to=erin)
    api: APIClient = client_for(issue_key(tenant=connector.tenant))
    assert api.delete(f"/api/v1/documents/plan.md?connector_id={connector.pk}").status_code == 204
    assert state(connector, "plan.md") is None
    connector_sync(connector=connector)
    assert state(connector, "plan.md") == (False, ["erin@example.com"], "")


def test_an_api_documents_decisions_survive_the_clients_delete_and_return(staff: Client) -> None:
    connector = ConnectorFactory.create(name="api")
    api = client_for(issue_key(tenant=connector.tenant))
    body = {"id": "memo", "content": "board memo", "acl": {"public": True}}
    assert api.post("/api/v1/index", body, format="json").status_code == 201
    post_document_action(staff, "soft_delete", Document.objects.get(external_id="memo"))
    assert api.delete("/api/v1/documents/memo").status_code == 204
    assert api.post("/api/v1/index", body, format="json").status_code == 201
    assert state(connector, "memo") == (True, [], "admin")


def test_clearing_a_gone_documents_policy_lets_the_source_decide_again(folder: Path, staff: Client) -> None:
    connector = ConnectorFactory.create(
        kind="filesystem", config={"path": str(folder)}, default_is_public=True
    )
    connector_sync(connector=connector)
    erin = PrincipalFactory.create(tenant=connector.tenant, external_id="erin@example.com")
    decide(Document.objects.get(connector=connector, external_id="plan.md"), narrow_to=erin, delete=True)
    (folder / "plan.md").unlink()
    connector_sync(connector=connector)
    policy = DocumentPolicy.objects.get(connector=connector, external_id="plan.md")
    listing = staff.get(reverse("admin:knowledge_documentpolicy_changelist")).content.decode()
    assert "ACL override by admin:ann" in listing and "soft-deleted by admin:ann" in listing
    post_policy_action(staff, "clear_deletion", policy)
    (folder / "plan.md").write_text("# Plan\nback")
    connector_sync(connector=connector)
    assert state(connector, "plan.md") == (False, ["erin@example.com"], "")
    post_policy_action(staff, "clear_acl_override", DocumentPolicy.objects.get(pk=policy.pk))
    assert state(connector, "plan.md") == (True, [], "")
    assert not DocumentPolicy.objects.filter(pk=policy.pk).exists()  # nothing left to keep


def test_the_document_page_and_who_can_see_this_say_the_decision_is_kept(folder: Path, staff: Client) -> None:
    connector = ConnectorFactory.create(
        kind="filesystem", config={"path": str(folder)}, default_is_public=True
    )
    connector_sync(connector=connector)
    erin = PrincipalFactory.create(tenant=connector.tenant, external_id="erin@example.com")
    document = Document.objects.get(connector=connector, external_id="plan.md")
    decide(document, narrow_to=erin, delete=True)
    url = reverse("admin:knowledge_document_change", args=[document.pk])
    page = staff.get(url, {"visible_to": "erin@example.com"}).content.decode()
    assert "Admin policy (kept by source id)" in page
    assert "it outlives prunes and applies again when the source brings this back" in page
    assert "an admin soft-deleted the document" in page and "kept by the document&#x27;s source id" in page


def test_deleting_the_connector_removes_its_policies(folder: Path) -> None:
    from knowledge.services.deletion import connector_delete

    connector = ConnectorFactory.create(
        kind="filesystem", config={"path": str(folder)}, default_is_public=True
    )
    connector_sync(connector=connector)
    decide(Document.objects.get(connector=connector, external_id="plan.md"), delete=True)
    connector_delete(connector=connector)
    assert not DocumentPolicy.objects.exists()
