"""Headless Chromium (Debian's, driven by Playwright) against a live server of the test database.

Static files reach the browser only the way they reach it in production: collected with the production
storage (hashed, compressed, manifest) and served by WhiteNoise. pytest-django's live server would also
serve them through Django's StaticFilesHandler (from the finders, in any mode), which hid an unstyled admin
before; here that handler is switched off. A failing test leaves a screenshot in SCREENSHOTS.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.core.management import call_command
from django.test import Client
from django.test.utils import override_settings
from playwright.sync_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Page,
    Playwright,
    Request,
    Response,
    sync_playwright,
)
from pytest_django.live_server_helper import LiveServer

import config.settings as production

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
SCREENSHOTS = Path(os.environ.get("BROWSER_SCREENSHOTS", ROOT / ".services" / "screenshots"))
# Without the background-networking flags Chromium calls home at start, and this closed network refuses it.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
TIMEOUT_MS = 15_000  # a page of this site loads in well under a second; fail fast, with a screenshot
REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    item.stash.setdefault(REPORTS, {})[report.when] = report
    return report


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    if not CHROMIUM.exists():
        message = f"no Chromium at {CHROMIUM}: run `scripts/bootstrap.sh --with-browser` (Debian's chromium)"
        if os.environ.get("BROWSER_REQUIRED", "") not in ("", "0"):
            pytest.fail(message)
        pytest.skip(message)
    # Playwright's sync API keeps an event loop running in this thread, which Django would take for async
    # code; the ORM calls here are the test's own, synchronous ones.
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as driver:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield driver


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    yield chromium
    chromium.close()


@pytest.fixture(scope="package")
def static_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """`collectstatic` with the production storage into a temporary STATIC_ROOT."""
    root = tmp_path_factory.mktemp("static")
    with override_settings(STATIC_ROOT=root, STORAGES=production.STORAGES, WHITENOISE_USE_FINDERS=False):
        call_command("collectstatic", interactive=False, verbosity=0)
        yield root


def _without_static_handler(application: WSGIHandler) -> WSGIHandler:
    return application


@pytest.fixture(scope="package")
def site(static_root: Path, django_db_setup: None) -> Iterator[str]:
    """The live server's base URL; the only static files it serves are WhiteNoise's."""
    server = LiveServer("127.0.0.1", start=False)
    server.thread.static_handler = _without_static_handler  # type: ignore[assignment]  # any WSGI wrapper
    server.start()
    yield server.url
    server.stop()


@dataclass
class Problems:
    """Console errors, page errors, failed requests and HTTP errors seen by a page."""

    seen: list[str] = field(default_factory=list)

    def watch(self, page: Page) -> None:
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.seen.append(f"page error: {error}"))
        page.on("requestfailed", self._failed)
        page.on("response", self._response)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.seen.append(f"console error: {message.text} ({message.location.get('url')})")

    def _failed(self, request: Request) -> None:
        if "ERR_ABORTED" in (request.failure or "") and not request.is_navigation_request():
            return  # the page navigated on before a subresource (a favicon) arrived: the browser's choice
        self.seen.append(f"request failed: {request.method} {request.url} ({request.failure})")

    def _response(self, response: Response) -> None:
        if response.status >= 400:
            self.seen.append(f"HTTP {response.status}: {response.request.method} {response.url}")

    def take(self) -> list[str]:
        found, self.seen = self.seen, []
        return found


@dataclass
class Tab:
    """A page of the site with its problems; `open` loads a path and asserts it came up clean."""

    page: Page
    base: str
    problems: Problems

    def open(self, path: str, *, status: int = 200, ready: str | None = None) -> Page:
        response = self.page.goto(self.base + path, wait_until="load")
        assert response is not None and response.status == status, (path, response and response.status)
        if ready:
            self.page.wait_for_selector(ready)
        self.assert_clean(path)
        return self.page

    def assert_clean(self, what: str) -> None:
        problems = self.problems.take()
        assert problems == [], f"{what}: {problems}"


def _session_key(username: str) -> str:
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(
        username=username, defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


TabMaker = Callable[..., Tab]


@pytest.fixture
def make_tab(
    browser: Browser, site: str, request: pytest.FixtureRequest, transactional_db: None
) -> Iterator[TabMaker]:
    """`make_tab(width=1280, staff=True)`: a fresh browser context, logged in as a superuser by default."""
    contexts: list[tuple[BrowserContext, Tab]] = []

    def make(*, width: int = 1280, height: int = 900, staff: bool = True) -> Tab:
        context = browser.new_context(viewport={"width": width, "height": height})
        context.set_default_timeout(TIMEOUT_MS)
        if staff:
            session = _session_key("browser-admin")
            context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": site}])
        tab = Tab(context.new_page(), site, Problems())
        tab.problems.watch(tab.page)
        contexts.append((context, tab))
        return tab

    yield make
    report = request.node.stash.get(REPORTS, {}).get("call")
    for number, (context, tab) in enumerate(contexts):
        if report is not None and report.failed:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            shot = SCREENSHOTS / f"{request.node.name.replace('/', '_')}-{number}.png"
            tab.page.screenshot(path=str(shot), full_page=True)
            print(f"screenshot of the failing page ({tab.page.url}): {shot}")
        context.close()


@pytest.fixture
def demo(transactional_db: None) -> None:
    """The demo knowledge base (`manage.py seed_demo`), committed so the server thread sees it."""
    call_command("seed_demo", verbosity=0, without_hosted=True)
