"""The crawl: seeds and sitemap pages first, then same-host links breadth-first, within the limits.

Each page is fetched conditionally when an earlier sync stored its validators (`metadata["http"]`); a
`304 Not Modified` is reported as `kept`, so nothing is re-extracted or re-embedded, and the links
stored with it (`metadata["links"]`) keep the crawl going past it.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from lxml import etree, html

from knowledge.connectors.extract.base import ExtractionError, format_for_media_type
from knowledge.connectors.extract.sandbox import Sandbox
from knowledge.connectors.types import Listing, SourceDocument, SourceError, SourceState
from knowledge.connectors.web.fetch import Fetched, Fetcher, FetchError, normalize
from knowledge.connectors.web.options import WebOptions
from knowledge.connectors.web.robots import Robots
from knowledge.connectors.web.sitemap import SitemapError, SitemapWalk, sitemap_urls

MAX_STORED_LINKS = 500
# Links to these are not documents; they are not even requested.
SKIPPED_SUFFIXES: tuple[str, ...] = (
    *(".css", ".js", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".webp", ".zip", ".gz", ".tar"),
    *(".mp3", ".mp4", ".webm", ".woff", ".woff2", ".ttf", ".exe", ".dmg", ".iso"),
)


@dataclass(frozen=True)
class Visit:
    url: str
    depth: int
    seed: bool  # an admin's URL: problems with it are always reported


class Crawler:
    """One listing of a web connector (single use)."""

    def __init__(self, options: WebOptions, fetcher: Fetcher, sandbox: Sandbox, state: SourceState | None):
        self.options = options
        self.fetcher = fetcher
        self.robots = Robots(fetcher)
        self.sandbox = sandbox
        self.state = state
        self.listing = Listing()
        self._queued: set[str] = set()
        self._frontier: deque[Visit] = deque()
        self._deadline = time.monotonic() + options.max_seconds

    def run(self) -> Listing:
        for url in self.options.urls:
            self._enqueue(Visit(normalize(url), 0, seed=True))
        for url in self._sitemap_pages():
            self._enqueue(Visit(normalize(url), 0, seed=False))
        visited = 0
        while self._frontier:
            if visited >= self.options.max_pages or time.monotonic() > self._deadline:
                self._stop_early(visited)
                break
            self._visit(self._frontier.popleft())
            visited += 1
        for origin, why in self.robots.unreachable.items():
            self.listing.fail_listing(
                f"{origin}/robots.txt could not be read ({why}); its pages were skipped"
            )
        return self.listing

    def _stop_early(self, visited: int) -> None:
        limit = "max_pages" if visited >= self.options.max_pages else "max_seconds"
        self.listing.fail_listing(
            f"stopped at {limit} after {visited} pages with {len(self._frontier)} left; nothing was removed"
        )

    def _enqueue(self, visit: Visit) -> None:
        if visit.url not in self._queued and self.options.in_scope(visit.url):
            self._queued.add(visit.url)
            self._frontier.append(visit)

    def _sitemap_pages(self) -> list[str]:
        pages: list[str] = []
        walk = SitemapWalk(in_scope=self.options.in_scope, deadline=self._deadline)
        for url in self.options.sitemaps:
            try:
                pages.extend(sitemap_urls(self.fetcher, url, self.options.max_pages, walk))
            except SitemapError as exc:
                self.listing.fail_listing(str(exc))
        for child in walk.skipped:
            self.listing.errors.append(
                SourceError(f"sitemap {child}: not read, its host is not one of the connector's hosts")
            )
        return pages

    def _visit(self, visit: Visit) -> None:
        stored = dict(self.state.metadata(visit.url) or {}) if self.state is not None else {}
        if visit.depth < self.options.max_depth and "links" not in stored:
            stored = {}  # stored before links were followed: a 304 would leave its links unknown
        try:
            fetched = self.fetcher.get(visit.url, validators=stored.get("http"))
        except FetchError as exc:
            self._failed(visit, exc)
            return
        if fetched.status == 304:
            self.listing.kept.add(visit.url)
            self._follow(visit, [link for link in stored.get("links", []) if isinstance(link, str)])
            return
        self._page(visit, fetched)

    def _failed(self, visit: Visit, exc: FetchError) -> None:
        if "disallowed by robots.txt" in str(exc) or exc.gone:
            if visit.seed:  # the admin's own URL: say so; the page is not kept
                self.listing.errors.append(_error(visit.url, str(exc)))
            return
        self.listing.fail_item(visit.url, str(exc))

    def _page(self, visit: Visit, fetched: Fetched) -> None:
        fmt = format_for_media_type(fetched.media_type) or ("html" if not fetched.media_type else None)
        if fmt is None:
            if visit.seed:
                self.listing.errors.append(
                    _error(visit.url, f"unsupported content type {fetched.media_type}")
                )
            return
        noindex, nofollow, links = _directives_and_links(fetched) if fmt == "html" else (False, False, [])
        if not nofollow:
            self._follow(visit, links)
        if noindex:
            return
        try:
            extracted = self.sandbox.extract_bytes(fetched.body, fmt, fetched.charset)
        except ExtractionError as exc:
            self.listing.fail_item(visit.url, str(exc))
            return
        if not extracted.text.strip():
            self.listing.kept.add(visit.url)  # an empty answer is more likely a glitch than a removal
            return
        self.listing.documents.append(
            self._document(visit, fetched, extracted.text, extracted.title, fmt, links)
        )

    def _document(
        self, visit: Visit, fetched: Fetched, text: str, title: str, fmt: str, links: list[str]
    ) -> SourceDocument:
        metadata: dict[str, Any] = {"format": fmt}
        validators = {
            "etag": fetched.headers.get("etag"),
            "last_modified": fetched.headers.get("last-modified"),
        }
        if any(validators.values()):
            metadata["http"] = {k: v for k, v in validators.items() if v}
        if self.options.max_depth:
            metadata["links"] = [link for link in links if self.options.in_scope(link)][:MAX_STORED_LINKS]
        return SourceDocument(
            external_id=visit.url,
            title=title or visit.url,
            content=text,
            source_url=fetched.url,
            metadata=metadata,
        )

    def _follow(self, visit: Visit, links: list[str]) -> None:
        if visit.depth >= self.options.max_depth:
            return
        for link in links:
            if not urlsplit(link).path.lower().endswith(SKIPPED_SUFFIXES):
                self._enqueue(Visit(link, visit.depth + 1, seed=False))


def _error(url: str, message: str) -> SourceError:
    return SourceError(message=f"{url}: {message}", external_id=url)


def _directives_and_links(fetched: Fetched) -> tuple[bool, bool, list[str]]:
    """(noindex, nofollow, absolute http(s) links) of an HTML page."""
    try:
        tree = html.document_fromstring(fetched.body)
    except (etree.ParserError, ValueError):
        return False, False, []
    robots = " ".join(tree.xpath("//meta[translate(@name,'ROBOTS','robots')='robots']/@content")).lower()
    base = urljoin(fetched.url, (tree.xpath("//base/@href") or [""])[0])
    links = []
    for anchor in tree.iterfind(".//a[@href]"):
        if "nofollow" in (anchor.get("rel") or "").lower():
            continue
        target = normalize(urljoin(base, anchor.get("href", "")))
        if urlsplit(target).scheme in {"http", "https"}:
            links.append(target)
    return "noindex" in robots, "nofollow" in robots, list(dict.fromkeys(links))
