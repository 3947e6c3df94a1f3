"""Real files made for the tests: PDFs (two pages, a scan, a hostile one), Word and PowerPoint files."""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import docx
import pptx
from fpdf import FPDF
from PIL import Image


def pdf(path: Path, pages: list[str], *, title: str = "") -> Path:
    document = FPDF()
    if title:
        document.set_title(title)
    for text in pages:
        document.add_page()
        document.set_font("helvetica", size=12)
        document.multi_cell(0, 10, text)
    document.output(str(path))
    return path


def scanned_pdf(path: Path, tmp: Path) -> Path:
    """An image-only PDF, as a scanner makes them: pixels, no text layer."""
    picture = tmp / "scan.png"
    Image.new("RGB", (200, 100), "white").save(picture)
    document = FPDF()
    for _ in range(2):
        document.add_page()
        document.image(str(picture), x=10, y=10, w=100)
    document.output(str(path))
    return path


def hostile_pdf(path: Path, *, operations: int = 100_000, pages: int = 20) -> Path:
    """A few-KB PDF whose pages share one compressed content stream of many text operators: pypdf
    spends over a second per page on it (20 s for the default), the kind of file a timeout must stop."""
    packed = zlib.compress(b"BT /F1 12 Tf 72 720 Td " + b"(a) Tj " * operations + b"ET", 9)
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R "
    page += b"/Resources << /Font << /F1 4 0 R >> >> >>"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        *[page] * pages,
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def word(path: Path) -> Path:
    document = docx.Document()
    document.add_heading("Staff handbook", 0)
    document.add_heading("Leave policy", 1)
    document.add_paragraph("Everyone gets twenty days of paid leave.")
    document.add_heading("Sick days", 2)
    document.add_paragraph("Ten sick days, no questions asked.")
    document.add_paragraph("Tell your manager", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    for (row, col), text in {(0, 0): "role", (0, 1): "days", (1, 0): "intern", (1, 1): "15"}.items():
        table.cell(row, col).text = text
    document.save(str(path))
    return path


def slides(path: Path) -> Path:
    deck = pptx.Presentation()
    for title, body in [("Roadmap", "Ship the crawler in Q3"), ("Risks", "Vendors may be late")]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    deck.save(str(path))
    return path


def word_bomb(path: Path, tmp: Path, *, megabytes: int = 512) -> Path:
    """A valid Word file whose body XML inflates from ~0.5 MB on disk to `megabytes` in memory."""
    source = word(tmp / "bomb-source.docx")
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for item in original.infolist():
            data = original.read(item)
            if item.filename != "word/document.xml":
                archive.writestr(item, data)
                continue
            head, tail = data.split(b"<w:body>", 1)
            with archive.open(item.filename, "w") as member:
                member.write(head + b"<w:body>")
                for _ in range(megabytes // 8):
                    member.write(b" " * (8 << 20))
                member.write(tail)
    return path
