"""Runs the extractor of a format on bytes, in the current process (the sandbox's child calls this)."""

from __future__ import annotations

from knowledge.connectors.extract.base import Extracted, ExtractionError, clean, decode


def extract_text(data: bytes, charset: str | None = None) -> Extracted:
    return Extracted(text=clean(decode(data, charset)))


def extract_bytes(fmt: str, data: bytes, charset: str | None = None) -> Extracted:
    """The text of `data` read as format `fmt` (see base.SUFFIXES); ExtractionError when it cannot be read."""
    if fmt == "text":
        return extract_text(data, charset)
    # Each format's module is imported when first needed: its library (trafilatura, pypdf, python-docx)
    # loads only in the extraction child that reads such a file.
    if fmt == "html":
        from knowledge.connectors.extract.html import extract_html

        return extract_html(data, charset)
    if fmt == "pdf":
        from knowledge.connectors.extract.pdf import extract_pdf

        return extract_pdf(data)
    if fmt == "docx":
        from knowledge.connectors.extract.office import extract_docx

        return extract_docx(data)
    if fmt == "pptx":
        from knowledge.connectors.extract.office import extract_pptx

        return extract_pptx(data)
    raise ExtractionError(f"unsupported format {fmt!r}")
