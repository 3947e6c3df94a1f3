"""robots.txt per host (RFC 9309, parsed by Protego): 4xx means no rules, unreachable means stay out."""

from __future__ import annotations

from urllib.parse import urlsplit

from protego import Protego

from knowledge.connectors.web.fetch import Fetcher, FetchError
from knowledge.connectors.web.options import USER_AGENT_TOKEN

MAX_ROBOTS_BYTES = 512 * 1024
MAX_CRAWL_DELAY = 30.0


class Robots:
    """The robots.txt rules of every host the crawl touches, fetched once per listing."""

    def __init__(self, fetcher: Fetcher) -> None:
        self.fetcher = fetcher
        self._rules: dict[str, Protego | None] = {}
        self.unreachable: dict[str, str] = {}  # origin -> why its robots.txt could not be read
        fetcher.allowed = self.allowed

    def allowed(self, url: str) -> bool:
        """Whether robots.txt lets us fetch `url`; FetchError (blocked) when its host is off limits."""
        rules = self._for(url)
        return rules is not None and bool(rules.can_fetch(url, USER_AGENT_TOKEN))

    def sitemaps(self, url: str) -> list[str]:
        rules = self._for(url)
        return list(rules.sitemaps) if rules is not None else []

    def _for(self, url: str) -> Protego | None:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self._rules:
            self._rules[origin] = self._fetch(origin, parts.hostname or "")
        return self._rules[origin]

    def _fetch(self, origin: str, host: str) -> Protego | None:
        allowed, self.fetcher.allowed = self.fetcher.allowed, lambda url: True
        try:
            fetched = self.fetcher.get(f"{origin}/robots.txt", limit=MAX_ROBOTS_BYTES)
        except FetchError as exc:
            if exc.blocked:
                raise  # the host itself is off limits: that is the page's error, not robots.txt's
            if exc.gone or str(exc).startswith("HTTP 4"):
                return Protego.parse("")  # no robots.txt: no rules
            self.unreachable[origin] = str(exc)
            return None  # unreachable: assume everything is disallowed (RFC 9309, 2.3.1.4)
        finally:
            self.fetcher.allowed = allowed
        rules = Protego.parse(fetched.body.decode("utf-8", errors="replace"))
        delay = rules.crawl_delay(USER_AGENT_TOKEN)
        if delay:
            self.fetcher.delays[host] = min(float(delay), MAX_CRAWL_DELAY)
        return rules
