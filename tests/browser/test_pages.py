"""Every page a person opens, in Chromium: loads clean (no failed request, no console error) and styled."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.db.models import Model
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import Page

from knowledge.models import AccessAudit, ApiKey, Document, SearchAudit, Tenant
from knowledge.services.audit import access_change_record, access_snapshot, query_hash
from tests.browser.conftest import TabMaker

pytestmark = pytest.mark.usefixtures("demo")
ADMIN_HEADER = "rgb(65, 118, 144)"  # the admin's --header-bg (#417690): its stylesheet was applied
MODELS = sorted(admin.site._registry, key=lambda m: m._meta.label)
OVERFLOW = "document.documentElement.scrollWidth - window.innerWidth"


def assert_admin_styled(page: Page) -> None:
    assert page.eval_on_selector("#header", "e => getComputedStyle(e).backgroundColor") == ADMIN_HEADER
    sheets = "[...document.querySelectorAll('link[rel=stylesheet]')]"
    assert page.evaluate(f"{sheets}.every(link => link.sheet && link.sheet.cssRules.length)")
    # The theme toggle's icons are inline SVG that only the stylesheet sizes (unstyled: big black squares).
    widths = page.eval_on_selector_all(
        "button.theme-toggle svg", "icons => icons.map(i => i.getBoundingClientRect().width)"
    )
    assert all(width < 30 for width in widths), widths


def _sample(model: type[Model]) -> Model:
    if model is Group:
        return Group.objects.get_or_create(name="reviewers")[0]
    if model is ApiKey:
        return ApiKey.issue(tenant=Tenant.objects.get(slug="primary"), name="browser", scopes=["search"])[0]
    if model in (SearchAudit, AccessAudit):  # the demo has no log yet: write one entry of each kind
        document = Document.objects.get(tenant__slug="primary", external_id="hr/salaries")
        tenant = document.tenant
        search = SearchAudit.objects.create(
            created_at=timezone.now(),
            tenant=tenant,
            actor="key",
            principal="hana@example.com",
            query_hash=query_hash("salary bands"),
            document_ids=[document.pk],
        )
        before = access_snapshot(document)
        change = access_change_record(
            user="admin:browser", document=document, action="restore", before=before
        )
        return search if model is SearchAudit else change
    obj = model._default_manager.order_by("pk").first()
    assert obj is not None, f"the demo has no {model.__name__}"
    return obj


def test_login_page_is_styled_and_logs_in(make_tab: TabMaker) -> None:
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_superuser("keyboard", password="a-long-test-password")
    tab = make_tab(staff=False)
    page = tab.open("/admin/login/")
    assert_admin_styled(page)
    page.fill("#id_username", "keyboard")
    page.fill("#id_password", "a-long-test-password")
    with page.expect_navigation():
        page.press("#id_password", "Enter")
    assert page.url.endswith("/admin/") and page.locator("#site-name").inner_text() == "Knowledge base admin"
    tab.assert_clean("after login")


def test_admin_index_links_the_staff_pages(make_tab: TabMaker) -> None:
    page = make_tab().open("/admin/")
    assert_admin_styled(page)
    for link in ("/playground/", "/evals/", "/api/docs/"):
        assert page.locator(f'#user-tools a[href="{link}"]').count() == 1


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m._meta.label)
def test_changelist_add_and_change_pages(make_tab: TabMaker, model: type[Model]) -> None:
    tab = make_tab()
    obj = _sample(model)
    info = (model._meta.app_label, model._meta.model_name)
    model_admin = admin.site._registry[model]
    urls = [
        reverse("admin:{}_{}_changelist".format(*info)),
        reverse("admin:{}_{}_change".format(*info), args=[obj.pk]),
    ]
    if model_admin.has_add_permission(_superuser_request()):
        urls.append(reverse("admin:{}_{}_add".format(*info)))
    for url in urls:
        page = tab.open(url)
        assert_admin_styled(page)
        assert page.locator("#content h1").count() == 1, url


def _superuser_request() -> Any:
    from django.contrib.auth import get_user_model
    from django.test import RequestFactory

    request = RequestFactory().get("/")
    request.user = get_user_model()(is_superuser=True, is_staff=True, is_active=True)
    return request


def test_api_docs_render_offline(make_tab: TabMaker) -> None:
    tab = make_tab(staff=False)
    page = tab.open("/api/docs/", ready=".swagger-ui .opblock-post")
    assert "Knowledge retrieval API" in page.locator(".swagger-ui .info .title").inner_text()
    assert page.locator(".swagger-ui .opblock").count() >= 6
    post = page.eval_on_selector(".swagger-ui .opblock-post", "e => getComputedStyle(e).borderColor")
    assert post == "rgb(73, 204, 144)"  # Swagger UI's stylesheet came from our static files
    assert all(
        "/static/" in src for src in page.eval_on_selector_all("script[src]", "s => s.map(e => e.src)")
    )
    tab.assert_clean("/api/docs/ after the schema loaded")


def test_eval_reports_list_and_detail_with_chart(make_tab: TabMaker, tmp_path: Path, settings: Any) -> None:
    settings.KNOWLEDGE_EVAL_REPORTS_DIR = tmp_path
    args = ["--configs", "keyword", "hybrid", "--json", str(tmp_path / "nightly.json")]
    call_command(
        "evals", "retrieval", *args, "--markdown", str(tmp_path / "nightly.md"), stdout=io.StringIO()
    )
    tab = make_tab()
    page = tab.open("/evals/")
    assert_admin_styled(page)
    with page.expect_navigation():
        page.click("text=nightly")
    tab.assert_clean("/evals/nightly/")
    assert page.locator("table.kb-metrics tbody tr").count() == 2
    assert page.eval_on_selector(".kb-chart img", "img => img.complete && img.naturalWidth") > 100


def test_document_page_answers_who_can_see_it(make_tab: TabMaker) -> None:
    doc = Document.objects.get(tenant__slug="primary", external_id="hr/salaries")
    tab = make_tab()
    page = tab.open(f"/admin/knowledge/document/{doc.pk}/change/")
    panel = page.locator("#who-can-see")
    assert "hana@example.com" in panel.inner_text()
    page.fill("#kb-visible-to", "erin@example.com")
    with page.expect_navigation():
        page.press("#kb-visible-to", "Enter")
    tab.assert_clean("the visibility check")
    assert "cannot see" in panel.inner_text() and panel.locator('[data-reason="acl"]').count() == 1


def test_a_playground_search_shows_on_the_documents_who_saw_it_panel(make_tab: TabMaker) -> None:
    doc = Document.objects.get(tenant__slug="primary", external_id="handbook/vacation")
    tab = make_tab()
    page = tab.open("/playground/?tenant=primary&identity=public&q=vacation+days&top_k=10")
    assert page.locator(".kb-hit").count() >= 1
    page = tab.open(f"/admin/knowledge/document/{doc.pk}/change/")
    panel = page.locator("#who-saw")
    assert "Staff user (playground)" in panel.inner_text() and "public only" in panel.inner_text()
    with page.expect_navigation():
        panel.locator("a", has_text="Every search that returned this document").click()
    tab.assert_clean("the search audit list")
    assert page.locator("#result_list tbody tr").count() >= 1


@pytest.mark.parametrize(
    "path",
    [
        "/admin/",
        "/playground/",
        "/evals/",
        "/admin/knowledge/document/",
        "/admin/knowledge/document/{doc}/change/",
    ],
)
def test_a_phone_wide_viewport_needs_no_horizontal_scrolling(make_tab: TabMaker, path: str) -> None:
    doc = Document.objects.get(tenant__slug="primary", external_id="eng/oncall")
    page = make_tab(width=390, height=844).open(path.format(doc=doc.pk))
    assert page.evaluate(OVERFLOW) <= 0, f"{path} scrolls sideways at 390 px"
