"""Loads files (Markdown, text, HTML, PDF, Word, PowerPoint) as source documents (id = relative path)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from knowledge.connectors.extract.base import SUFFIXES, ExtractionError, format_for_suffix
from knowledge.connectors.extract.html import html_to_text
from knowledge.connectors.extract.sandbox import Sandbox
from knowledge.connectors.types import Listing, SourceAcl, SourceDocument, SourceError
from knowledge.connectors.walk import DEFAULT_PATTERNS, Walk, relative_id

__all__ = ["SUFFIXES", "FileProblem", "html_to_text", "iter_files", "load_file", "relative_id"]

DEFAULT_MAX_BYTES = 10 * 1024 * 1024


class FileProblem(Exception):
    """A file that exists but cannot be loaded (unreadable, too large, corrupt, no text); says why."""


def _title_of(path: Path, text: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem.replace("-", " ").replace("_", " ")


def load_file(
    path: Path,
    root: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    sandbox: Sandbox | None = None,
    boundary: str | None = None,
) -> SourceDocument | None:
    """One file as a source document; None for unsupported formats and files with no text.

    The file is opened and parsed in `sandbox` (a new one for this file when not given; a given one
    applies its own size limit), only when its real path lies under `boundary` (default: root's).

    :raises FileProblem: when the file cannot be read, is larger than the limit, leaves the boundary,
        is not a regular file, or cannot be turned into text (corrupt, a scan without a text layer, too
        slow to parse).
    """
    fmt = format_for_suffix(path.suffix)
    if fmt is None:
        return None
    limit = boundary if boundary is not None else root
    try:
        if sandbox is None:
            with Sandbox(max_bytes=max_bytes) as own:
                extracted = own.extract_file(path, fmt, root=limit)
        else:
            extracted = sandbox.extract_file(path, fmt, root=limit)
    except ExtractionError as exc:
        raise FileProblem(str(exc)) from exc
    if not extracted.text.strip():
        return None
    return SourceDocument(
        external_id=relative_id(path, root),
        title=extracted.title or _title_of(path, extracted.text),
        content=extracted.text,
        source_url=path.resolve().as_uri(),
        metadata={"format": path.suffix.lower().lstrip("."), **extracted.metadata},
    )


def iter_files(
    paths: Sequence[Path], errors: list[SourceError] | None = None, *, acl: SourceAcl | None = None
) -> Iterator[SourceDocument]:
    """Source documents of every supported file under the given files and folders, sorted by path.

    Folders are walked within the source boundary, as a filesystem connector's are. A file that
    cannot be loaded, or that the boundary skips, is reported in `errors` (when given); the rest load.
    """
    with Sandbox(max_bytes=DEFAULT_MAX_BYTES) as sandbox:
        for root in paths:
            base = root if root.is_dir() else root.parent
            listing = Listing()
            found = Walk(root, DEFAULT_PATTERNS, listing).files() if root.is_dir() else [root]
            if errors is not None:
                errors.extend(listing.errors)
            for path in found:
                try:
                    document = load_file(path, base, sandbox=sandbox)
                except FileProblem as exc:
                    if errors is not None:
                        errors.append(
                            SourceError(f"{relative_id(path, base)}: {exc}", relative_id(path, base))
                        )
                    continue
                if document is not None:
                    yield document if acl is None else replace(document, acl=acl)
