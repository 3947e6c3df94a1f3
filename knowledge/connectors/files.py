"""Loads Markdown, text and HTML files as source documents (external id = path relative to its root)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from html.parser import HTMLParser
from pathlib import Path

from knowledge.services.ingestion import SourceDocument

SUFFIXES = {".md", ".markdown", ".txt", ".html", ".htm"}
SKIPPED_TAGS = {"script", "style", "noscript", "template"}
BLOCK_TAGS = {"p", "div", "br", "li", "tr", "section", "article", "h1", "h2", "h3", "h4", "h5", "h6"}


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


def load_file(path: Path, root: Path) -> SourceDocument | None:
    """One file as a source document; None for unsupported or empty files."""
    if path.suffix.lower() not in SUFFIXES:
        return None
    raw = path.read_text(encoding="utf-8", errors="replace")
    title, text = html_to_text(raw) if path.suffix.lower() in {".html", ".htm"} else ("", raw)
    if not text.strip():
        return None
    relative = path.relative_to(root).as_posix() if path != root else path.name
    return SourceDocument(
        external_id=relative,
        title=title or _title_of(path, text),
        content=text,
        source_url=path.resolve().as_uri(),
        is_public=True,
    )


def iter_files(paths: Sequence[Path]) -> Iterator[SourceDocument]:
    """Source documents of every supported file under the given files and folders, sorted by path."""
    for root in paths:
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for path in files:
            document = load_file(path, root if root.is_dir() else root.parent)
            if document is not None:
                yield document
