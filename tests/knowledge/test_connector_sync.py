"""Connector sync: filesystem and web sources ingested, vanished documents soft-deleted, claims exclusive."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.utils import timezone

from knowledge.models import Connector, Document
from knowledge.services.connector_sync import connector_sync, connectors_due
from knowledge.tasks import sync_connector
from tests.factories import ConnectorFactory

pytestmark = pytest.mark.django_db


def fs_connector(path: Path, **config: object) -> Connector:
    return ConnectorFactory.create(kind="filesystem", config={"path": str(path), **config})


def live(connector: Connector) -> dict[str, str]:
    return dict(connector.documents.filter(deleted_at__isnull=True).values_list("external_id", "content"))


def test_filesystem_sync_ingests_updates_soft_deletes_and_restores(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\nalpha")
    (tmp_path / "b.txt").write_text("beta")
    (tmp_path / "skip.csv").write_text("x,y")
    connector = fs_connector(tmp_path)
    outcome = connector_sync(connector=connector)
    assert outcome.claimed and outcome.stats is not None and outcome.stats.documents == 2
    assert set(live(connector)) == {"a.md", "b.txt"}
    connector.refresh_from_db()
    assert connector.last_sync_status == "ok" and connector.last_synced_at is not None

    (tmp_path / "b.txt").unlink()
    (tmp_path / "a.md").write_text("# A\nalpha, revised")
    assert connector_sync(connector=connector).deleted == 1
    assert live(connector) == {"a.md": "# A\nalpha, revised"}
    assert not Document.objects.filter(connector=connector, external_id="b.txt").exists()

    (tmp_path / "b.txt").write_text("beta")
    connector_sync(connector=connector)
    assert set(live(connector)) == {"a.md", "b.txt"}
    assert (
        not Document.objects.get(connector=connector, external_id="b.txt")
        .chunks.filter(is_deleted=True)
        .exists()
    )


def test_patterns_limit_the_files(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("alpha")
    (tmp_path / "b.txt").write_text("beta")
    connector = fs_connector(tmp_path, patterns=["**/*.md"])
    connector_sync(connector=connector)
    assert set(live(connector)) == {"a.md"}


def test_a_missing_folder_fails_the_sync_and_deletes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("alpha")
    connector = fs_connector(tmp_path)
    connector_sync(connector=connector)
    connector.config = {"path": str(tmp_path / "unmounted")}
    connector.save()
    outcome = connector_sync(connector=connector)
    connector.refresh_from_db()
    assert connector.last_sync_status == "failed" and "not a readable directory" in connector.last_sync_error
    assert outcome.deleted == 0 and set(live(connector)) == {"a.md"}


def test_a_running_sync_is_not_claimed_twice_unless_abandoned(tmp_path: Path) -> None:
    connector = fs_connector(tmp_path)
    Connector.objects.filter(pk=connector.pk).update(
        last_sync_status="running", last_synced_at=timezone.now()
    )
    assert not connector_sync(connector=connector).claimed
    Connector.objects.filter(pk=connector.pk).update(last_synced_at=timezone.now() - timedelta(days=1))
    assert connector_sync(connector=connector).claimed


class Pages(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if self.path == "/ok.html":
            body = b"<html><title>Ok page</title><body><p>web content here</p></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_error(404)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_web_sync_fetches_pages_and_records_failures(site: str) -> None:
    connector = ConnectorFactory.create(
        kind="web", config={"urls": [f"{site}/ok.html", f"{site}/missing.html"]}
    )
    result = sync_connector(connector.pk)
    assert result["claimed"] and result["documents"] == 1
    document = Document.objects.get(connector=connector)
    assert document.title == "Ok page" and document.content == "web content here"
    connector.refresh_from_db()
    assert connector.last_sync_status == "failed" and connector.last_sync_error_count == 1
    assert "missing.html" in connector.last_sync_error


def test_due_connectors(tmp_path: Path) -> None:
    never = fs_connector(tmp_path)
    recent = fs_connector(tmp_path)
    Connector.objects.filter(pk=recent.pk).update(last_synced_at=timezone.now())
    old = fs_connector(tmp_path)
    Connector.objects.filter(pk=old.pk).update(last_synced_at=timezone.now() - timedelta(hours=2))
    ConnectorFactory.create(kind="filesystem", config={"path": str(tmp_path)}, enabled=False)
    ConnectorFactory.create()  # api: pushed to, never pulled
    assert set(connectors_due()) == {never.pk, old.pk}
