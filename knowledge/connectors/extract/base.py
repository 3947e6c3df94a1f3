"""The extracted-text value type, the formats by file suffix and media type, and extraction errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PAGE_BREAK = "\f"

#: Format names by file suffix.
SUFFIXES = {
    ".md": "text",
    ".markdown": "text",
    ".txt": "text",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
}

#: Format names by media type (for web responses).
MEDIA_TYPES = {
    "text/plain": "text",
    "text/markdown": "text",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
}

#: Formats parsed by third-party code from untrusted bytes: always extracted in the sandbox.
SANDBOXED = frozenset({"html", "pdf", "docx", "pptx"})


@dataclass(frozen=True)
class Extracted:
    """A file's text (Markdown headings; `\\f` between pages), its title (may be blank) and metadata."""

    text: str
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


class ExtractionError(Exception):
    """A file that could not be turned into text; the message says why (corrupt, no text layer, ...)."""


def format_for_suffix(suffix: str) -> str | None:
    return SUFFIXES.get(suffix.lower())


def format_for_media_type(media_type: str) -> str | None:
    return MEDIA_TYPES.get(media_type.split(";", 1)[0].strip().lower())


def decode(data: bytes, charset: str | None) -> str:
    """Text of `data` in the declared charset; UTF-8 when none is declared or the name is not a text
    encoding Python knows (a server's `charset=x-bogus` must not fail the page)."""
    if charset:
        try:
            return data.decode(charset, errors="replace")
        except (LookupError, ValueError, TypeError):
            pass
    return data.decode("utf-8", errors="replace")


def clean(text: str) -> str:
    """Text PostgreSQL accepts (no NULs), with trailing blanks trimmed from every line (page breaks stay)."""
    lines = text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip(" \t") for line in lines).strip("\n \t")
