"""HTML: the main content (trafilatura) as Markdown with its headings; the whole visible text otherwise.

trafilatura drops navigation, footers, cookie banners and other boilerplate. When it finds no main
content (a very short page, an index of links), the page's visible text is kept instead, so a page
never silently becomes empty.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from knowledge.connectors.extract.base import Extracted, clean, decode

SKIPPED_TAGS = {"script", "style", "noscript", "template"}
BLOCK_TAGS = {"p", "div", "br", "li", "tr", "section", "article", "h1", "h2", "h3", "h4", "h5", "h6"}
# Sphinx and MkDocs end headings with a permalink sign that means nothing as text.
HEADING_PERMALINK = re.compile(r"^(#{1,6} .*?)\s*[¶#]$", re.MULTILINE)
MARKDOWN_ESCAPE = re.compile(r"\\(.)")
HEADING_LINE = re.compile(r"^(#{1,6}) (.+)$", re.MULTILINE)
INLINE_MARKUP = re.compile(r"(?<!\\)(`+|\*\*|\*)")


def _plain(text: str) -> str:
    """Markdown inline markup removed: headings become the chunker's heading path, read as text."""
    return MARKDOWN_ESCAPE.sub(r"\1", INLINE_MARKUP.sub("", text)).strip()


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
        if len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
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
    """(title, text) of an HTML document: every visible line, headings as Markdown headings."""
    parser = _HtmlText()
    parser.feed(html)
    lines = [" ".join(line.split()) for line in "".join(parser.parts).splitlines()]
    return parser.title, "\n".join(line for line in lines if line)


def _title(page_title: str, text: str) -> str:
    """The page's title; "Data Structures" rather than "Data Structures — Python 3.11 documentation"
    when the main content's first heading starts the <title> (the rest names the site, on every page)."""
    first = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), "")
    return first if first and page_title.startswith(first) else page_title or first


def extract_html(data: bytes, charset: str | None = None) -> Extracted:
    """The page's main content as Markdown, and its title."""
    import trafilatura  # imported here: only the sandbox's child process pays for it

    html = decode(data, charset)
    fallback_title, fallback_text = html_to_text(html)
    main = trafilatura.extract(
        html,
        output_format="markdown",
        include_formatting=True,
        include_tables=True,
        include_links=False,
        include_images=False,
        include_comments=False,
        favor_recall=True,
    )
    text = HEADING_PERMALINK.sub(r"\1", clean(main or ""))
    text = HEADING_LINE.sub(lambda m: f"{m.group(1)} {_plain(m.group(2))}", text)
    if not text.strip():
        return Extracted(text=fallback_text, title=fallback_title, metadata={"extractor": "visible-text"})
    return Extracted(text=text, title=_title(fallback_title, text), metadata={"extractor": "trafilatura"})
