"""Loads Markdown, text and HTML files as source documents (external id = path relative to its root)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

from knowledge.connectors.types import SourceAcl, SourceDocument, SourceError

SUFFIXES = {".md", ".markdown", ".txt", ".html", ".htm"}
SKIPPED_TAGS = {"script", "style", "noscript", "template"}
BLOCK_TAGS = {"p", "div", "br", "li", "tr", "section", "article", "h1", "h2", "h3", "h4", "h5", "h6"}
DEFAULT_MAX_BYTES = 10 * 1024 * 1024


class FileProblem(Exception):
    """A file that exists but cannot be loaded (unreadable, too large); the message says why."""


class _HtmlText(HTMLParser):
    """Visible text of an HTML page, with headings kept as Markdown headings."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.title = ""
        self._stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self._stack.append(tag)
        if tag in BLOCK_TAGS:
            self.parts.append("\n")
        if len(tag) == 2 and tag[0] == "h" and tag[1].isdigit():
            self.parts.append("#" * int(tag[1]) + " ")

    def handle_endtag(self, tag: str) -> None:
        while self._stack and self._stack.pop() != tag:
            pass
        if tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if any(t in SKIPPED_TAGS for t in self._stack):
            return
        if self._stack and self._stack[-1] == "title":
            self.title += data.strip()
            return
        self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML document."""
    parser = _HtmlText()
    parser.feed(html)
    lines = [" ".join(line.split()) for line in "".join(parser.parts).splitlines()]
    return parser.title, "\n".join(line for line in lines if line)


def _title_of(path: Path, text: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem.replace("-", " ").replace("_", " ")


def relative_id(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path != root else path.name


def load_file(path: Path, root: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> SourceDocument | None:
    """One file as a source document; None for unsupported or empty files.

    :raises FileProblem: when the file cannot be read or is larger than `max_bytes`.
    """
    if path.suffix.lower() not in SUFFIXES:
        return None
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise FileProblem(f"{size} bytes is larger than the {max_bytes}-byte limit")
        raw = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise FileProblem(f"cannot read: {exc.strerror or exc}") from exc
    title, text = html_to_text(raw) if path.suffix.lower() in {".html", ".htm"} else ("", raw)
    if not text.strip():
        return None
    return SourceDocument(
        external_id=relative_id(path, root),
        title=title or _title_of(path, text),
        content=text,
        source_url=path.resolve().as_uri(),
    )


def iter_files(
    paths: Sequence[Path], errors: list[SourceError] | None = None, *, acl: SourceAcl | None = None
) -> Iterator[SourceDocument]:
    """Source documents of every supported file under the given files and folders, sorted by path.

    A file that cannot be loaded is reported in `errors` (when given) and skipped; the rest load.
    """
    for root in paths:
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        base = root if root.is_dir() else root.parent
        for path in files:
            try:
                document = load_file(path, base)
            except FileProblem as exc:
                if errors is not None:
                    errors.append(SourceError(f"{relative_id(path, base)}: {exc}", relative_id(path, base)))
                continue
            if document is not None:
                yield document if acl is None else replace(document, acl=acl)
