"""The filesystem kind on real PDF, Word and PowerPoint files: pages into citations, bad files kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowledge.connectors.filesystem import FilesystemKind
from knowledge.models import Chunk, Connector, Document
from knowledge.search import search_chunks
from knowledge.services.connector_sync import connector_sync
from retrieval_backends.types import SearchScope
from tests.api.conftest import client_for, issue_key
from tests.factories import ConnectorFactory
from tests.knowledge.connectors import samples

pytestmark = pytest.mark.django_db

PAGE_ONE = "Ownership of the crawler belongs to the platform team."
PAGE_TWO = "Mitochondria are the powerhouse of the cell, says page two."


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    samples.pdf(root / "report.pdf", [PAGE_ONE, PAGE_TWO], title="Quarterly report")
    samples.word(root / "handbook.docx")
    samples.slides(root / "deck.pptx")
    (root / "notes.md").write_text("# Notes\nplain markdown")
    return root


def fs_connector(root: Path, **config: object) -> Connector:
    return ConnectorFactory.create(
        kind="filesystem", config={"path": str(root), **config}, default_is_public=True
    )


def live(connector: Connector) -> set[str]:
    return set(connector.documents.filter(deleted_at__isnull=True).values_list("external_id", flat=True))


def test_pdf_word_and_slides_are_ingested_with_headings_and_pages(folder: Path) -> None:
    connector = fs_connector(folder)
    outcome = connector_sync(connector=connector)
    assert outcome.errors == () and live(connector) == {
        "report.pdf",
        "handbook.docx",
        "deck.pptx",
        "notes.md",
    }
    report = Document.objects.get(connector=connector, external_id="report.pdf")
    assert report.title == "Quarterly report" and report.metadata == {"format": "pdf", "pages": 2}
    pages = dict(Chunk.objects.filter(document=report).values_list("content", "page"))
    assert pages == {f"Quarterly report\n{PAGE_ONE}": 1, f"Quarterly report\n{PAGE_TWO}": 2}
    handbook = Chunk.objects.filter(document__external_id="handbook.docx", connector=connector)
    assert "Staff handbook > Leave policy > Sick days\nTen sick days" in " ".join(c.content for c in handbook)
    assert all(c.page is None for c in handbook)
    slides = Chunk.objects.filter(document__external_id="deck.pptx", connector=connector).order_by("page")
    assert [(c.page, c.content) for c in slides] == [
        (1, "deck > Roadmap\nShip the crawler in Q3"),
        (2, "deck > Risks\nVendors may be late"),
    ]


def test_a_pdf_hit_cites_its_page_in_search_and_in_the_api(folder: Path) -> None:
    connector = fs_connector(folder)
    connector_sync(connector=connector)
    scope = SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))
    top = search_chunks(scope=scope, query_text="mitochondria powerhouse", limit=3).hits[0]
    assert (top.title, top.page) == ("Quarterly report", 2)
    api = client_for(issue_key(tenant=connector.tenant))
    response = api.post("/api/v1/search", {"query": "mitochondria powerhouse", "top_k": 20}, format="json")
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert (results[0]["document_id"], results[0]["page"]) == ("report.pdf", 2)
    assert next(r for r in results if r["document_id"] == "notes.md")["page"] is None


def test_corrupt_scanned_and_oversized_files_are_errors_and_are_never_deleted(
    folder: Path, tmp_path: Path
) -> None:
    connector = fs_connector(folder, max_file_bytes=200_000)
    connector_sync(connector=connector)
    (folder / "report.pdf").write_bytes(b"%PDF-1.4\ntruncated by a bad copy")
    samples.scanned_pdf(folder / "scan.pdf", tmp_path)
    (folder / "huge.txt").write_text("x " * 150_000)
    outcome = connector_sync(connector=connector)
    messages = "\n".join(outcome.errors)
    assert "report.pdf: not a readable PDF" in messages
    assert "scan.pdf: no text layer on any of its 2 pages (a scanned PDF?)" in messages
    assert "huge.txt: 300000 bytes is larger than the 200000-byte limit" in messages
    assert outcome.deleted == 0 and "report.pdf" in live(connector)
    report = Document.objects.get(connector=connector, external_id="report.pdf")
    assert PAGE_TWO in report.content  # the last good version stays searchable
    connector.refresh_from_db()
    assert connector.last_sync_status == "failed" and connector.last_sync_error_count == 3


def test_a_hostile_pdf_times_out_as_an_error_and_the_rest_syncs(folder: Path) -> None:
    samples.hostile_pdf(folder / "hostile.pdf")
    connector = fs_connector(folder, extract_timeout_seconds=1)
    outcome = connector_sync(connector=connector)
    assert outcome.errors == ("hostile.pdf: extraction took longer than 1 s (stopped)",)
    assert live(connector) == {"report.pdf", "handbook.docx", "deck.pptx", "notes.md"}


def test_acl_files_apply_to_extracted_formats_and_fail_closed(folder: Path) -> None:
    secret = folder / "secret"
    secret.mkdir()
    samples.pdf(secret / "plan.pdf", ["The secret plan."])
    (secret / ".kbacl.json").write_text(json.dumps({"users": ["erin@example.com"], "groups": ["board"]}))
    broken = folder / "broken"
    broken.mkdir()
    samples.word(broken / "minutes.docx")
    (broken / ".kbacl.json").write_text("{not json")
    connector = fs_connector(folder)
    outcome = connector_sync(connector=connector)
    plan = Document.objects.get(connector=connector, external_id="secret/plan.pdf")
    assert not plan.is_public and plan.acl_origin == "source"
    assert sorted(plan.allowed_principals.values_list("external_id", flat=True)) == [
        "board",
        "erin@example.com",
    ]
    assert Document.objects.get(connector=connector, external_id="report.pdf").is_public  # connector default
    assert any(
        e.startswith("broken/minutes.docx: broken/.kbacl.json: cannot read it") for e in outcome.errors
    )
    minutes = Document.objects.get(connector=connector, external_id="broken/minutes.docx")
    assert (minutes.is_public, minutes.acl_origin, minutes.allowed_principals.count()) == (False, "source", 0)


def test_config_checks_the_extraction_timeout() -> None:
    kind = FilesystemKind()
    assert kind.validate_config({"path": "/srv/docs", "extract_timeout_seconds": 30}) == {}
    for bad in (0, -1, "10", True, 601):
        problems = kind.validate_config({"path": "/srv/docs", "extract_timeout_seconds": bad})
        assert "extract_timeout_seconds" in problems["config"]
