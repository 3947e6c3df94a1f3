"""PDF through pypdf: the text layer of every page, pages separated by form feeds (page numbers survive).

A PDF whose pages carry no text at all (a scan) is an error that says so: it needs OCR first, and
silently indexing nothing would hide it.
"""

from __future__ import annotations

import io

from knowledge.connectors.extract.base import PAGE_BREAK, Extracted, ExtractionError, clean


def extract_pdf(data: bytes) -> Extracted:
    from pypdf import PdfReader  # imported here: only the sandbox's child process pays for it
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ExtractionError("the PDF is encrypted with a password")
        pages = [clean((page.extract_text() or "").replace(PAGE_BREAK, "\n")) for page in reader.pages]
        title = str(reader.metadata.get("/Title") or "").strip() if reader.metadata else ""
    except PdfReadError as exc:
        raise ExtractionError(f"not a readable PDF ({exc})") from exc
    if not pages:
        raise ExtractionError("the PDF has no pages")
    if not any(page.strip() for page in pages):
        raise ExtractionError(
            f"no text layer on any of its {len(pages)} pages (a scanned PDF?); run OCR on it first"
        )
    text = f"\n{PAGE_BREAK}\n".join(pages)
    return Extracted(text=text, title=title, metadata={"pages": len(pages)})
