"""Loads files (Markdown, text, HTML, PDF, Word, PowerPoint) as source documents (id = relative path)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from knowledge.connectors.extract.base import SUFFIXES, ExtractionError, format_for_suffix
from knowledge.connectors.extract.html import html_to_text
from knowledge.connectors.extract.sandbox import Sandbox
from knowledge.connectors.types import SourceAcl, SourceDocument, SourceError

__all__ = ["SUFFIXES", "FileProblem", "html_to_text", "iter_files", "load_file", "relative_id"]

DEFAULT_MAX_BYTES = 10 * 1024 * 1024


class FileProblem(Exception):
    """A file that exists but cannot be loaded (unreadable, too large, corrupt, no text); says why."""


def _title_of(path: Path, text: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem.replace("-", " ").replace("_", " ")


def relative_id(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path != root else path.name


def load_file(
    path: Path, root: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, sandbox: Sandbox | None = None
) -> SourceDocument | None:
    """One file as a source document; None for unsupported formats and files with no text.

    Binary and HTML formats are parsed in `sandbox` (a new one for this file when not given).

    :raises FileProblem: when the file cannot be read, is larger than `max_bytes`, or cannot be
        turned into text (corrupt, a scan without a text layer, too slow to parse).
    """
    fmt = format_for_suffix(path.suffix)
    if fmt is None:
        return None
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise FileProblem(f"{size} bytes is larger than the {max_bytes}-byte limit")
        if sandbox is None:
            with Sandbox(max_bytes=max_bytes) as own:
                extracted = own.extract_file(path, fmt)
        else:
            extracted = sandbox.extract_file(path, fmt)
    except OSError as exc:
        raise FileProblem(f"cannot read: {exc.strerror or exc}") from exc
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

    A file that cannot be loaded is reported in `errors` (when given) and skipped; the rest load.
    """
    with Sandbox(max_bytes=DEFAULT_MAX_BYTES) as sandbox:
        for root in paths:
            found = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
            base = root if root.is_dir() else root.parent
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
