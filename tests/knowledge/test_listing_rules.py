"""A bad item is an error on that item; pruning needs a complete listing; a failed fetch never deletes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from knowledge.models import Document
from knowledge.services.connector_sync import connector_sync
from tests.factories import ConnectorFactory

pytestmark = pytest.mark.django_db


def live(connector_id: int) -> set[str]:
    return set(
        Document.objects.filter(connector_id=connector_id, deleted_at__isnull=True).values_list(
            "external_id", flat=True
        )
    )


def test_a_bad_file_fails_alone_and_removed_files_are_still_pruned(tmp_path: Path) -> None:
    for name in ("keep.md", "gone.md", "big.md"):
        (tmp_path / name).write_text(f"{name} text")
    connector = ConnectorFactory.create(
        kind="filesystem", config={"path": str(tmp_path), "max_file_bytes": 100}, default_is_public=True
    )
    connector_sync(connector=connector)
    assert live(connector.pk) == {"keep.md", "gone.md", "big.md"}

    (tmp_path / "gone.md").unlink()
    (tmp_path / "big.md").write_text("x" * 500)  # now over the limit: an error, but not a removal
    (tmp_path / "ghost.md").symlink_to(tmp_path / "nowhere.md")  # listed, unreadable
    (tmp_path / "new.md").write_text("new text")
    outcome = connector_sync(connector=connector)
    assert live(connector.pk) == {"keep.md", "big.md", "new.md"}
    assert Document.objects.get(connector=connector, external_id="big.md").content == "big.md text"
    errors = "\n".join(outcome.errors)
    assert "big.md" in errors and "limit" in errors and "ghost.md" in errors
    connector.refresh_from_db()
    assert connector.last_sync_status == "failed" and connector.last_sync_error_count == 2


def test_an_empty_listing_removes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("alpha")
    connector = ConnectorFactory.create(kind="filesystem", config={"path": str(tmp_path)})
    connector_sync(connector=connector)
    (tmp_path / "a.md").unlink()
    outcome = connector_sync(connector=connector)
    assert live(connector.pk) == {"a.md"} and outcome.deleted == 0
    assert any("listed nothing" in w for w in outcome.warnings)


class FlakyPages(BaseHTTPRequestHandler):
    fail = False

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if FlakyPages.fail and self.path == "/flaky.html":
            self.send_error(503)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(f"<title>{self.path}</title><p>page {self.path}</p>".encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FlakyPages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    FlakyPages.fail = False


def test_a_page_that_fails_once_is_kept_and_one_dropped_from_config_is_pruned(site: str) -> None:
    urls = [f"{site}/flaky.html", f"{site}/stable.html", f"{site}/old.html"]
    connector = ConnectorFactory.create(kind="web", config={"urls": urls})
    connector_sync(connector=connector)
    assert live(connector.pk) == set(urls)
    FlakyPages.fail = True
    connector.config = {"urls": urls[:2]}
    connector.save()
    outcome = connector_sync(connector=connector)
    assert live(connector.pk) == set(urls[:2])
    assert outcome.deleted == 1 and any("flaky.html" in e for e in outcome.errors)
