"""Word (python-docx) and PowerPoint (python-pptx): headings as Markdown headings, slides as pages."""

from __future__ import annotations

import io
import re
from typing import Any

from knowledge.connectors.extract.base import PAGE_BREAK, Extracted, clean

HEADING_STYLE = re.compile(r"^Heading ([1-9])$")


def _paragraph_line(paragraph: Any) -> str:
    text = " ".join(paragraph.text.split())
    style = paragraph.style.name if paragraph.style is not None else ""
    if not text:
        return ""
    if style == "Title":
        return f"# {text}"
    heading = HEADING_STYLE.match(style)
    if heading:
        return f"{'#' * min(int(heading.group(1)), 6)} {text}"
    if style.startswith("List"):
        return f"- {text}"
    return text


def _table_lines(table: Any) -> list[str]:
    rows = []
    for row in table.rows:
        cells = [" ".join(cell.text.split()) for cell in row.cells]
        if any(cells):
            rows.append(" | ".join(cells))
    return rows


def extract_docx(data: bytes) -> Extracted:
    """Paragraphs and tables in document order; the Title style and Heading N become Markdown headings."""
    import docx  # imported here: only the sandbox's child process pays for it

    document = docx.Document(io.BytesIO(data))
    lines: list[str] = []
    for block in document.iter_inner_content():
        lines.extend(_table_lines(block) if hasattr(block, "rows") else [_paragraph_line(block)])
    title = (document.core_properties.title or "").strip()
    text = clean("\n\n".join(line for line in lines if line))
    if not title:
        title = next((line.lstrip("# ") for line in lines if line.startswith("# ")), "")
    return Extracted(text=text, title=title)


def _slide_text(slide: Any, number: int) -> str:
    title_shape = slide.shapes.title
    heading = " ".join(title_shape.text.split()) if title_shape is not None else ""
    lines = [f"## {heading or f'Slide {number}'}"]
    for shape in slide.shapes:
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        if getattr(shape, "has_text_frame", False):
            lines.extend(" ".join(p.text.split()) for p in shape.text_frame.paragraphs)
        elif getattr(shape, "has_table", False):
            lines.extend(_table_lines(shape.table))
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame
        if notes is not None and notes.text.strip():
            lines.append(f"Notes: {' '.join(notes.text.split())}")
    return clean("\n".join(line for line in lines if line))


def extract_pptx(data: bytes) -> Extracted:
    """One page per slide: the slide title as a heading, then its text, tables and notes."""
    import pptx  # imported here: only the sandbox's child process pays for it

    presentation = pptx.Presentation(io.BytesIO(data))
    slides = [_slide_text(slide, n) for n, slide in enumerate(presentation.slides, start=1)]
    title = (presentation.core_properties.title or "").strip()
    return Extracted(text=f"\n{PAGE_BREAK}\n".join(slides), title=title, metadata={"pages": len(slides)})
