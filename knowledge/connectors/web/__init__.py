"""The web kind: pages from seed URLs and sitemaps, crawled politely (robots.txt, per-host delay,
conditional GET) and safely (bounded redirects and sizes, an SSRF guard on every connection)."""

from knowledge.connectors.web.kind import WebKind

__all__ = ["WebKind"]
