"""The search playground in Chromium: personas see what the API would show them; keyboard and phone use."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.core.management import call_command
from playwright.sync_api import Page

from knowledge.models import Principal
from tests.browser.conftest import Tab, TabMaker

pytestmark = pytest.mark.usefixtures("demo")
MAX_TABS = 80


def persona(email: str) -> str:
    return f"user:{Principal.objects.get(tenant__slug='primary', external_id=email).pk}"


def titles(page: Page) -> list[str]:
    return page.locator(".kb-hit h3").all_inner_texts()


def run(tab: Tab, query: str, identity: str = "public", **extra: str) -> Page:
    params = {"tenant": "primary", "identity": identity, "top_k": "10", "q": query, **extra}
    page = tab.open(f"/playground/?{urlencode(params)}")
    assert page.locator(".kb-timing").inner_text().startswith("in ")
    return page


def test_the_expected_top_hit_for_a_seeded_query(make_tab: TabMaker) -> None:
    page = run(make_tab(), "how much vacation do we get", persona("erin@example.com"))
    assert titles(page)[0] == "Vacation policy"
    first = page.locator(".kb-hit").first
    assert first.locator("mark").first.inner_text().lower() == "vacation"
    assert "handbook/vacation" in first.locator(".kb-citation").inner_text()
    with page.expect_navigation():
        first.locator("h3 a").click()
    assert "/admin/knowledge/document/" in page.url and page.locator("#who-can-see").count() == 1


def test_a_restricted_document_follows_the_persona(make_tab: TabMaker) -> None:
    tab = make_tab()
    assert "Salary bands 2026" not in titles(run(tab, "salary bands", persona("erin@example.com")))
    assert "Salary bands 2026" not in titles(run(tab, "salary bands"))
    assert titles(run(tab, "salary bands", persona("hana@example.com")))[0] == "Salary bands 2026"


def test_choosing_a_tenant_hides_the_other_tenants_choices(make_tab: TabMaker) -> None:
    tab = make_tab()
    page = tab.open("/playground/?tenant=primary")
    visible = "sel => [...sel.options].filter(o => !o.hidden).map(o => o.textContent)"
    assert not any("acme" in o for o in page.eval_on_selector("#id_identity", visible))
    page.select_option("#id_tenant", "acme")
    people = page.eval_on_selector("#id_identity", visible)
    assert "sam@acme.example (acme)" in people and not any("(primary)" in o for o in people)


def test_keyboard_only_search(make_tab: TabMaker) -> None:
    tab = make_tab()
    page = tab.open("/playground/?tenant=primary&identity=" + persona("erin@example.com"))
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "id_q":
            break
    else:
        pytest.fail(f"the query box was not reached with {MAX_TABS} presses of Tab")
    page.keyboard.type("carry over unused days")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    tab.assert_clean("the search submitted with Enter")
    assert titles(page)[0] == "Vacation policy"


def test_results_fit_a_phone_screen(make_tab: TabMaker) -> None:
    page = run(make_tab(width=390, height=844), "database outages escalation", "bypass")
    assert titles(page)
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0


def test_the_hosted_connectors_recorded_syncs_follow_their_source_acls(make_tab: TabMaker) -> None:
    call_command("seed_demo", verbosity=0)  # adds the Confluence, Drive, GitHub and Slack syncs
    tab = make_tab()
    erin = titles(run(tab, "database failover drill", persona("erin@example.com")))
    eli = titles(run(tab, "database failover drill", persona("eli@example.com")))
    assert "Database failover drill" in erin and "Database failover drill" not in eli
    assert "Incident review process" in titles(
        run(tab, "blameless incident review", persona("eli@example.com"))
    )
    assert "Incident review process" not in titles(
        run(tab, "blameless incident review", persona("hana@example.com"))
    )
    page = tab.open("/admin/knowledge/connector/")
    rows = page.locator("#result_list tbody tr").all_inner_texts()
    for name in ("team-wiki", "team-drive", "platform-repo", "team-slack"):
        assert any(name in row and "OK" in row for row in rows), (name, rows)
    page.get_by_role("link", name="team-drive").first.click()
    page.wait_for_load_state()
    tab.assert_clean("the Google Drive connector's page")
    assert "Google Drive" in page.locator("div.field-kind").inner_text()
    assert page.locator("tr:not(#runs-empty) > td.field-kind").all_inner_texts() == ["Sync"]  # its run
