"""Extractors on real generated files, and the sandbox's time and memory bounds."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowledge.connectors.extract.base import ExtractionError
from knowledge.connectors.extract.sandbox import Sandbox
from tests.knowledge.connectors import samples

NAV_PAGE = b"""<html><head><title>Leave | Intranet</title></head><body>
<nav><a href="/">Home</a> <a href="/about">About us</a> <a href="/jobs">Careers menu</a></nav>
<div class="cookie-banner">We use cookies. Accept all cookies?</div>
<article><h1>Leave policy</h1>
<p>Everyone gets twenty days of paid leave each year, and unused days carry over to the next year.</p>
<h2>Sick days</h2>
<p>Ten sick days are granted without a doctor's note; longer absences need one from the third day.</p>
</article>
<footer>Copyright 2024 Example Corp. Imprint. Privacy policy.</footer></body></html>"""


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(timeout=30) as box:
        yield box


def test_a_two_page_pdf_keeps_its_pages_and_title(tmp_path: Path, sandbox: Sandbox) -> None:
    path = samples.pdf(tmp_path / "two.pdf", ["Alpha is on page one.", "Beta is on page two."], title="Two")
    extracted = sandbox.extract_file(path, "pdf")
    first, second = extracted.text.split("\f")
    assert "Alpha is on page one." in first and "Beta is on page two." in second
    assert extracted.title == "Two" and extracted.metadata == {"pages": 2}


def test_a_scanned_pdf_is_reported_as_having_no_text_layer(tmp_path: Path, sandbox: Sandbox) -> None:
    path = samples.scanned_pdf(tmp_path / "scan.pdf", tmp_path)
    with pytest.raises(ExtractionError, match="no text layer on any of its 2 pages"):
        sandbox.extract_file(path, "pdf")


def test_corrupt_files_are_errors_that_name_the_format(tmp_path: Path, sandbox: Sandbox) -> None:
    (tmp_path / "bad.pdf").write_bytes(b"%PDF-1.4\nnot really a pdf\n%%EOF")
    (tmp_path / "bad.docx").write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(ExtractionError, match="not a readable PDF"):
        sandbox.extract_file(tmp_path / "bad.pdf", "pdf")
    with pytest.raises(ExtractionError, match=r"not a readable Word \(.docx\) file"):
        sandbox.extract_file(tmp_path / "bad.docx", "docx")
    assert sandbox.started == 1  # an error is a reply, not a crash: the same child goes on


def test_word_headings_lists_and_tables_become_markdown(tmp_path: Path, sandbox: Sandbox) -> None:
    extracted = sandbox.extract_file(samples.word(tmp_path / "handbook.docx"), "docx")
    lines = extracted.text.split("\n\n")
    assert lines[:3] == ["# Staff handbook", "# Leave policy", "Everyone gets twenty days of paid leave."]
    assert "## Sick days" in lines and "- Tell your manager" in lines
    assert "role | days" in lines and "intern | 15" in lines
    assert extracted.title == "Staff handbook"


def test_slides_are_pages_with_their_titles_as_headings(tmp_path: Path, sandbox: Sandbox) -> None:
    extracted = sandbox.extract_file(samples.slides(tmp_path / "deck.pptx"), "pptx")
    assert extracted.text.split("\n\f\n") == [
        "## Roadmap\nShip the crawler in Q3",
        "## Risks\nVendors may be late",
    ]
    assert extracted.metadata == {"pages": 2}


def test_html_keeps_the_main_content_and_its_headings_not_the_boilerplate(sandbox: Sandbox) -> None:
    extracted = sandbox.extract_bytes(NAV_PAGE, "html")
    assert extracted.text.startswith("# Leave policy\n")
    assert "## Sick days" in extracted.text and "twenty days of paid leave" in extracted.text
    for boilerplate in ("About us", "Accept all cookies", "Copyright", "Careers menu"):
        assert boilerplate not in extracted.text
    assert extracted.title == "Leave | Intranet" and extracted.metadata == {"extractor": "trafilatura"}


def test_html_without_main_content_keeps_its_visible_text(sandbox: Sandbox) -> None:
    extracted = sandbox.extract_bytes(
        b"<title>T</title><nav><a href=/>Home</a> <a href=/x>Index</a></nav>", "html"
    )
    assert extracted.text == "Home Index" and extracted.metadata == {"extractor": "visible-text"}


def test_a_hostile_pdf_is_stopped_at_the_timeout_and_the_next_file_still_extracts(tmp_path: Path) -> None:
    hostile = samples.hostile_pdf(tmp_path / "hostile.pdf")  # ~20 s of parsing in 5 KB
    fine = samples.pdf(tmp_path / "fine.pdf", ["Still works."])
    with Sandbox(timeout=1.0) as box:
        started = time.monotonic()
        with pytest.raises(ExtractionError, match="took longer than 1 s"):
            box.extract_file(hostile, "pdf")
        assert time.monotonic() - started < 5
        assert "Still works." in box.extract_file(fine, "pdf").text
        assert box.started == 2  # the stuck child was killed and replaced


def test_a_decompression_bomb_hits_the_memory_limit_not_the_caller(tmp_path: Path) -> None:
    bomb = samples.word_bomb(tmp_path / "bomb.docx", tmp_path)  # 512 MB of XML in ~0.5 MB
    assert bomb.stat().st_size < 1 << 20
    with Sandbox(timeout=60, memory_mb=384) as box:
        with pytest.raises(ExtractionError, match="ran out of memory"):
            box.extract_file(bomb, "docx")
        assert (
            "Still works." in box.extract_file(samples.pdf(tmp_path / "ok.pdf", ["Still works."]), "pdf").text
        )


def test_files_over_the_size_limit_are_refused_before_parsing(tmp_path: Path) -> None:
    big = tmp_path / "big.pdf"
    big.write_bytes(b"%PDF-1.4\n" + b"0" * 2048)
    with (
        Sandbox(max_bytes=1024) as box,
        pytest.raises(ExtractionError, match="larger than the 1024-byte limit"),
    ):
        box.extract_file(big, "pdf")


def test_titles_drop_the_site_name_and_headings_their_markup(sandbox: Sandbox) -> None:
    body = "<p>" + "JSON is a lightweight data interchange format used everywhere. " * 3 + "</p>"
    title = "<title>json — JSON encoder and decoder — Python 3.11 documentation</title>"
    page = f"<html><head>{title}</head><body><article><h1><code>json</code> — JSON encoder and decoder</h1>"
    page += f"{body}</article></body></html>"
    extracted = sandbox.extract_bytes(page.encode(), "html")
    assert extracted.title == "json — JSON encoder and decoder"
    assert extracted.text.startswith("# json — JSON encoder and decoder\n")  # no inline markup in headings
