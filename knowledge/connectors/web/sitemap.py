"""Sitemaps (sitemaps.org): `urlset` files and `sitemapindex` files of them, plain or gzipped."""

from __future__ import annotations

import gzip
import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from lxml import etree

from knowledge.connectors.web.fetch import Fetcher, FetchError

MAX_SITEMAP_BYTES = 50 * 1024 * 1024  # the protocol's own limit, uncompressed
MAX_INDEX_DEPTH = 2


class SitemapError(Exception):
    """A sitemap that could not be read: the listing is then incomplete (nothing is pruned)."""


def _parser() -> etree.XMLParser:
    # No entities, no DTDs, no network: a sitemap is untrusted XML.
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def _xml(body: bytes) -> bytes:
    if body[:2] != b"\x1f\x8b":
        return body
    with gzip.GzipFile(fileobj=io.BytesIO(body)) as unzipped:
        data = unzipped.read(MAX_SITEMAP_BYTES + 1)
    if len(data) > MAX_SITEMAP_BYTES:
        raise SitemapError(f"larger than {MAX_SITEMAP_BYTES} bytes once decompressed")
    return data


def parse(body: bytes) -> tuple[list[str], list[str]]:
    """(page URLs, child sitemap URLs) of one sitemap file."""
    try:
        root = etree.fromstring(_xml(body), parser=_parser())
    except (etree.XMLSyntaxError, OSError, EOFError) as exc:
        raise SitemapError(f"not a sitemap ({exc})") from exc
    locations = [(loc.text or "").strip() for loc in root.iterfind("{*}*/{*}loc")]
    locations = [loc for loc in locations if loc]
    if etree.QName(root).localname == "sitemapindex":
        return [], locations
    return locations, []


@dataclass(frozen=True)
class SitemapWalk:
    """What bounds a listing's sitemap phase: the hosts it may fetch from and its deadline."""

    in_scope: Callable[[str], bool]
    deadline: float
    skipped: list[str] = field(default_factory=list)  # child sitemaps outside the hosts, not fetched


def sitemap_urls(fetcher: Fetcher, url: str, limit: int, walk: SitemapWalk, depth: int = 0) -> list[str]:
    """Page URLs of the sitemap at `url`, following an index down to MAX_INDEX_DEPTH, at most `limit`.
    Child sitemaps on hosts out of scope are skipped (and recorded in `walk.skipped`).

    :raises SitemapError: when any sitemap in the tree cannot be fetched or parsed, or the listing's
        time budget runs out.
    """
    if time.monotonic() > walk.deadline:
        raise SitemapError(f"sitemap {url}: not read, max_seconds was reached while reading sitemaps")
    try:
        body = fetcher.get(url, limit=MAX_SITEMAP_BYTES).body
    except FetchError as exc:
        raise SitemapError(f"sitemap {url}: {exc}") from exc
    try:
        pages, children = parse(body)
    except SitemapError as exc:
        raise SitemapError(f"sitemap {url}: {exc}") from exc
    if children and depth >= MAX_INDEX_DEPTH:
        raise SitemapError(f"sitemap {url}: sitemap indexes nested deeper than {MAX_INDEX_DEPTH}")
    for child in children:
        if len(pages) >= limit:
            break
        if not walk.in_scope(child):
            walk.skipped.append(child)
            continue
        pages.extend(sitemap_urls(fetcher, child, limit - len(pages), walk, depth + 1))
    return pages[:limit]
