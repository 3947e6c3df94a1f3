"""The web kind: fetches a list of pages (external id = the URL); a failed fetch never deletes."""

from __future__ import annotations

import urllib.request
from typing import Any
from urllib.error import URLError
from urllib.parse import urlparse

from knowledge.connectors.base import ConnectorKind
from knowledge.connectors.files import html_to_text
from knowledge.connectors.types import Listing, SourceDocument

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
    except (URLError, TimeoutError, ValueError, OSError) as exc:
        raise FetchError(f"{exc}") from exc
    if len(raw) > MAX_BYTES:
        raise FetchError(f"larger than {MAX_BYTES} bytes")
    text = raw.decode(charset, errors="replace")
    title, content = html_to_text(text) if is_html else ("", text)
    return SourceDocument(external_id=url, title=title or url, content=content, source_url=url)


class WebKind(ConnectorKind):
    name = "web"
    label = "Web pages"
    config_keys = frozenset({"urls"})

    def check(self, config: dict[str, Any]) -> dict[str, str]:
        urls = config.get("urls")
        if not isinstance(urls, list) or not urls:
            return {"config": "urls: required: a non-empty list of http(s) URLs"}
        bad = [u for u in urls if not isinstance(u, str) or urlparse(u).scheme not in {"http", "https"}]
        if bad:
            return {"config": f"urls: not http(s) URLs: {bad[:3]}"}
        return {}

    def list_source(self, config: dict[str, Any]) -> Listing:
        listing = Listing()
        for url in dict.fromkeys(config["urls"]):
            try:
                page = fetch_page(url)
            except FetchError as exc:
                listing.fail_item(url, str(exc))
                continue
            if page.content.strip():
                listing.documents.append(page)
            else:
                listing.kept.add(url)  # an empty answer is more likely a glitch than a removal
        return listing
