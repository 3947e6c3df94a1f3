"""Fetches the pages of a web connector as source documents (external id = the URL)."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator, Sequence
from urllib.error import URLError

from knowledge.connectors.files import html_to_text
from knowledge.services.ingestion import SourceDocument

MAX_BYTES = 5 * 1024 * 1024
TIMEOUT_SECONDS = 20


class FetchError(Exception):
    """A page could not be fetched; the message names the URL."""


def fetch_page(url: str) -> SourceDocument:
    request = urllib.request.Request(url, headers={"User-Agent": "knowledge-retrieval-connector/1.0"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 (http/https only)
            raw = response.read(MAX_BYTES + 1)
            charset = response.headers.get_content_charset() or "utf-8"
            is_html = "html" in (response.headers.get_content_type() or "")
    except (URLError, TimeoutError, ValueError) as exc:
        raise FetchError(f"{url}: {exc}") from exc
    if len(raw) > MAX_BYTES:
        raise FetchError(f"{url}: larger than {MAX_BYTES} bytes")
    text = raw.decode(charset, errors="replace")
    title, content = html_to_text(text) if is_html else ("", text)
    return SourceDocument(
        external_id=url, title=title or url, content=content, source_url=url, is_public=True
    )


def iter_pages(urls: Sequence[str], errors: list[str]) -> Iterator[SourceDocument]:
    """Each page that could be fetched; failures are appended to `errors` and skipped."""
    for url in urls:
        try:
            page = fetch_page(url)
        except FetchError as exc:
            errors.append(str(exc))
            continue
        if page.content.strip():
            yield page
