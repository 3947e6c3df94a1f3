"""The audit log: every search (API and playground) with who, how, a query hash and the documents in
rank order; admin access changes with before and after; the document page's "Who saw this?"; export,
retention, and the buffered writer that keeps it off the search's path."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError
from django.test import Client
from django.utils import timezone

from knowledge.models import AccessAudit, ApiKey, Document, Principal, SearchAudit, Tenant
from knowledge.services import audit
from knowledge.services.audit import AuditWriter, query_hash
from knowledge.store.audit import SearchEntry
from knowledge.tasks import purge_audit_log
from tests.api.conftest import client_for, issue_key, post
from tests.factories import TenantFactory, UserFactory

pytestmark = pytest.mark.django_db
QUERY = "harbour ferry timetable"


@pytest.fixture
def tenant() -> Tenant:
    tenant = TenantFactory.create(slug="acme")
    api = client_for(issue_key(tenant=tenant, scopes=("index",)))
    post(api, "index", {"id": "open", "content": f"{QUERY} for all", "acl": {"public": True}})
    post(api, "index", {"id": "erin", "content": f"{QUERY} {QUERY}", "acl": {"users": ["erin@example.com"]}})
    SearchAudit.objects.all().delete()
    return tenant


def ids(*external_ids: str) -> list[int]:
    found = dict(Document.objects.filter(external_id__in=external_ids).values_list("external_id", "pk"))
    return [found[e] for e in external_ids]


def test_each_api_search_records_who_asked_how_and_what_came_back(tenant: Tenant) -> None:
    searcher = client_for(issue_key(tenant=tenant, scopes=("search",), on_behalf_of=True, bypass_acl=True))
    key = ApiKey.objects.get(scopes=["search"])
    post(searcher, "search", {"query": QUERY, "on_behalf_of": " Erin@Example.com"})
    post(searcher, "search", {"query": QUERY, "top_k": 5})
    post(searcher, "search", {"query": QUERY, "bypass_acl": True})
    as_erin, public, bypass = SearchAudit.objects.order_by("pk")
    assert (as_erin.actor, as_erin.principal, as_erin.api_key_id) == (
        "on_behalf_of",
        "erin@example.com",
        key.pk,
    )
    assert as_erin.document_ids == ids("erin", "open")  # rank order, one entry per document
    assert as_erin.query_hash == query_hash(QUERY) and as_erin.query_text == ""
    assert (public.actor, public.principal, public.document_ids, public.filters) == (
        "key",
        "",
        ids("open"),
        {"top_k": 5},
    )
    assert bypass.actor == "bypass" and set(bypass.document_ids) == set(ids("erin", "open"))


def test_the_raw_question_is_kept_only_when_allowed_and_auditing_can_be_off(
    tenant: Tenant, settings: Any
) -> None:
    searcher = client_for(issue_key(tenant=tenant, scopes=("search",)))
    settings.KNOWLEDGE_AUDIT_QUERY_TEXT = True
    post(searcher, "search", {"query": QUERY})
    assert SearchAudit.objects.get().query_text == QUERY
    settings.KNOWLEDGE_AUDIT = False
    post(searcher, "search", {"query": QUERY})
    assert SearchAudit.objects.count() == 1


def test_a_playground_search_records_the_staff_user_and_the_identity(tenant: Tenant, staff: Client) -> None:
    erin = Principal.objects.get(external_id="erin@example.com")
    response = staff.get(
        "/playground/", {"tenant": "acme", "identity": f"user:{erin.pk}", "q": QUERY, "top_k": "10"}
    )
    assert response.status_code == 200
    entry = SearchAudit.objects.get()
    assert (entry.actor, entry.principal, entry.api_key_id) == ("staff", "erin@example.com", None)
    assert (
        entry.staff_user
        and entry.document_ids == ids("erin", "open")
        and entry.filters["bypass_acl"] is False
    )


def test_admin_changes_of_access_are_recorded_with_before_and_after(tenant: Tenant, staff: Client) -> None:
    document = Document.objects.get(external_id="erin")
    changelist = "/admin/knowledge/document/"
    staff.post(changelist, {"action": "soft_delete", "_selected_action": [document.pk]})
    staff.post(changelist, {"action": "restore", "_selected_action": [document.pk]})
    hidden, shown = AccessAudit.objects.order_by("pk")
    assert (hidden.action, hidden.change, hidden.before["deleted"], hidden.after["deleted"]) == (
        "soft_delete",
        "narrowed",
        False,
        True,
    )
    assert (shown.action, shown.change) == ("restore", "widened") and shown.user.startswith("admin:")
    form = staff.get(f"{changelist}{document.pk}/change/").context["adminform"].form
    data = {name: form.initial.get(name) for name in form.fields if form.initial.get(name) is not None}
    data |= {"is_public": "on", "allowed_principals": [], "metadata": "{}"}
    data |= {"chunks-TOTAL_FORMS": "0", "chunks-INITIAL_FORMS": "0"}
    response = staff.post(f"{changelist}{document.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    override = AccessAudit.objects.order_by("pk").last()
    assert override is not None and override.action == "acl_override" and override.change == "both"
    assert override.before["users"] == ["erin@example.com"] and override.after["public"] is True


def test_the_document_page_says_who_saw_it_to_those_who_may_read_the_log(
    tenant: Tenant, client: Client
) -> None:
    searcher = client_for(issue_key(tenant=tenant, scopes=("search",), on_behalf_of=True))
    post(searcher, "search", {"query": QUERY, "on_behalf_of": "erin@example.com"})
    document = Document.objects.get(external_id="erin")
    page = f"/admin/knowledge/document/{document.pk}/change/"
    viewer = UserFactory.create(is_superuser=False)
    viewer.user_permissions.add(Permission.objects.get(codename="view_document"))
    client.force_login(viewer)
    assert "Who saw this document?" not in client.get(page).content.decode()
    viewer.user_permissions.add(Permission.objects.get(codename="view_searchaudit"))
    viewer = type(viewer).objects.get(pk=viewer.pk)  # permissions are cached per user object
    client.force_login(viewer)
    html = client.get(page).content.decode()
    assert "Who saw this document?" in html and "<code>erin@example.com</code>" in html
    listed = client.get("/admin/knowledge/searchaudit/", {"q": f"doc:{document.pk}"})
    assert listed.status_code == 200 and len(listed.context["cl"].result_list) == 1
    assert client.get("/admin/knowledge/searchaudit/add/").status_code == 403
    for term in ("doc:99999999999999999999999", "doc:x", "doc:"):  # no document: nothing, never a 500
        odd = client.get("/admin/knowledge/searchaudit/", {"q": term})
        assert odd.status_code == 200 and len(odd.context["cl"].result_list) == 0


def test_export_writes_json_lines_of_the_period_and_refuses_bad_dates(tenant: Tenant) -> None:
    searcher = client_for(issue_key(tenant=tenant, scopes=("search",)))
    post(searcher, "search", {"query": QUERY})
    SearchAudit.objects.create(
        created_at=timezone.now() - timedelta(days=3),
        tenant=tenant,
        actor="key",
        query_hash=query_hash("old"),
    )
    out = StringIO()
    since = (timezone.now() - timedelta(days=1)).date().isoformat()
    call_command("audit", "export", "--since", since, "--format", "jsonl", stdout=out, stderr=StringIO())
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(lines) == 1 and lines[0]["type"] == "search" and lines[0]["tenant"] == "acme"
    assert lines[0]["results"] == [{"document_id": ids("open")[0], "rank": 1}]
    with pytest.raises(CommandError, match="--since must be an ISO date"):
        call_command("audit", "export", "--since", "last tuesday", stdout=StringIO())


def test_retention_purges_old_entries(tenant: Tenant, settings: Any) -> None:
    old = timezone.now() - timedelta(days=100)
    SearchAudit.objects.create(created_at=old, tenant=tenant, actor="key", query_hash=query_hash("a"))
    SearchAudit.objects.create(
        created_at=timezone.now(), tenant=tenant, actor="key", query_hash=query_hash("b")
    )
    assert purge_audit_log() == 1 and SearchAudit.objects.count() == 1
    settings.KNOWLEDGE_AUDIT_RETENTION_DAYS = 0  # keep everything
    SearchAudit.objects.update(created_at=old)
    assert purge_audit_log() == 0


def test_the_writer_keeps_entries_through_a_database_error_and_bounds_what_waits(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = AuditWriter()
    monkeypatch.setattr(audit, "MAX_PENDING", 3)
    monkeypatch.setattr(writer, "_run", lambda: None)  # flushed by hand here
    entries = [
        SearchEntry(timezone.now(), tenant.pk, None, "", "key", "", "h", "", {"top_k": 5}, [7, 3])
        for _ in range(4)
    ]
    for entry in entries:
        writer.add(entry)
    assert len(writer.pending()) == 3 and writer.dropped == 1

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise DatabaseError("connection refused")

    monkeypatch.setattr(audit, "search_entries_copy", refuse)
    assert writer.flush() == 0 and len(writer.pending()) == 3  # kept for the next try
    monkeypatch.undo()
    assert writer.flush() == 3 and SearchAudit.objects.count() == 3
    landed = SearchAudit.objects.first()
    assert landed is not None and landed.document_ids == [7, 3] and landed.filters == {"top_k": 5}


def test_the_writer_lands_a_batch_of_several_slices_in_order(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = AuditWriter()
    monkeypatch.setattr(writer, "_run", lambda: None)
    for i in range(2 * audit.SLICE + 3):
        writer.add(SearchEntry(timezone.now(), tenant.pk, None, "", "key", f"u{i}", "h", "", {}, [i]))
    assert writer.flush() == 2 * audit.SLICE + 3 and not writer.pending()
    landed = list(SearchAudit.objects.order_by("pk").values_list("principal", "document_ids"))
    assert landed == [(f"u{i}", [i]) for i in range(2 * audit.SLICE + 3)]


@pytest.mark.django_db(transaction=True)
def test_the_background_writer_lands_searches_within_a_few_seconds(settings: Any) -> None:
    settings.KNOWLEDGE_AUDIT_WRITES = "background"
    tenant = TenantFactory.create(slug="acme")
    searcher = client_for(issue_key(tenant=tenant, scopes=("search",)))
    started = time.monotonic()
    for _ in range(3):
        assert post(searcher, "search", {"query": QUERY}).status_code == 200
    while SearchAudit.objects.count() < 3 and time.monotonic() - started < 10:
        time.sleep(0.1)
    assert SearchAudit.objects.count() == 3
    audit.WRITER.idle.clear()
    assert audit.WRITER.idle.wait(5)  # then it lets go of its connection (the test database can be dropped)
