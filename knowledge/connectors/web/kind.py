"""The web kind's class: config keys and validation, and a listing through the crawler."""

from __future__ import annotations

from typing import Any

from knowledge.connectors.base import ConnectorKind
from knowledge.connectors.extract.sandbox import Sandbox
from knowledge.connectors.types import Listing, SourceState
from knowledge.connectors.web import options
from knowledge.connectors.web.crawl import Crawler
from knowledge.connectors.web.fetch import Fetcher, make_client


class WebKind(ConnectorKind):
    """Web pages (external id = the URL). Keys, all optional but one of `urls`/`sitemaps`:

    `urls` seed pages; `sitemaps` sitemap or sitemap-index URLs; `max_depth` link hops from them (0);
    `max_pages` (500); `allowed_hosts` other hosts redirects and links may reach; `delay_seconds`
    between two requests to one host (1, or the robots.txt Crawl-delay); `timeout_seconds` per
    request (20); `max_page_bytes` (5 MiB); `max_redirects` (5); `extract_timeout_seconds` (60);
    `max_seconds` for the whole listing (600); `allow_private_addresses` (false) lets redirects and
    links reach loopback, link-local and private addresses.
    """

    name = "web"
    label = "Web pages"
    config_keys = options.KEYS

    def check(self, config: dict[str, Any]) -> dict[str, str]:
        problems = options.check(config)
        return {"config": "; ".join(problems)} if problems else {}

    def list_source(
        self, config: dict[str, Any], state: SourceState | None = None, *, credential: str = ""
    ) -> Listing:
        parsed = options.WebOptions.from_config(config)
        with (
            make_client(parsed) as client,
            Sandbox(timeout=parsed.extract_timeout_seconds, max_bytes=parsed.max_page_bytes) as sandbox,
        ):
            return Crawler(parsed, Fetcher(parsed, client), sandbox, state).run()
