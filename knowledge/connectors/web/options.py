"""A web connector's configuration: its keys, their defaults and bounds, and their validation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

USER_AGENT_TOKEN = "knowledge-retrieval-bot"
USER_AGENT = f"{USER_AGENT_TOKEN}/1.0"


@dataclass(frozen=True)
class Bound:
    """A numeric key: its default and its inclusive range."""

    default: float
    low: float
    high: float
    integer: bool = True


BOUNDS = {
    "max_depth": Bound(0, 0, 10),
    "max_pages": Bound(500, 1, 50_000),
    "max_redirects": Bound(5, 0, 20),
    "max_page_bytes": Bound(5 * 1024 * 1024, 1024, 100 * 1024 * 1024),
    "delay_seconds": Bound(1.0, 0, 60, integer=False),
    "timeout_seconds": Bound(20.0, 0.1, 300, integer=False),
    "extract_timeout_seconds": Bound(60.0, 0.1, 600, integer=False),
    "max_seconds": Bound(600.0, 1, 86_400, integer=False),
}
LISTS = ("urls", "sitemaps", "allowed_hosts")
KEYS = frozenset({*BOUNDS, *LISTS, "allow_private_addresses"})


@dataclass(frozen=True)
class WebOptions:
    """Parsed, validated configuration (see `check` for the meaning of each key)."""

    urls: tuple[str, ...]
    sitemaps: tuple[str, ...]
    allowed_hosts: frozenset[str]
    allow_private_addresses: bool
    max_depth: int
    max_pages: int
    max_redirects: int
    max_page_bytes: int
    delay_seconds: float
    timeout_seconds: float
    extract_timeout_seconds: float
    max_seconds: float

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> WebOptions:
        def number(key: str) -> Any:
            value = config.get(key, BOUNDS[key].default)
            return int(value) if BOUNDS[key].integer else float(value)

        return cls(
            urls=tuple(dict.fromkeys(config.get("urls", []))),
            sitemaps=tuple(dict.fromkeys(config.get("sitemaps", []))),
            allowed_hosts=frozenset(h.lower() for h in config.get("allowed_hosts", [])),
            allow_private_addresses=bool(config.get("allow_private_addresses", False)),
            **{key: number(key) for key in BOUNDS},
        )

    @property
    def seed_hosts(self) -> frozenset[str]:
        """Hosts of the admin's own URLs: the crawl stays on these (plus `allowed_hosts`)."""
        return frozenset(host_of(u) for u in (*self.urls, *self.sitemaps))

    def in_scope(self, url: str) -> bool:
        return host_of(url) in self.seed_hosts | self.allowed_hosts


def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def _is_http_url(value: object) -> bool:
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return parts.scheme in {"http", "https"} and bool(parts.hostname)


def _check_number(key: str, value: object, bound: Bound) -> str | None:
    kinds = (int,) if bound.integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not bound.low <= value <= bound.high:
        what = "an integer" if bound.integer else "a number"
        return f"{key}: must be {what} from {bound.low:g} to {bound.high:g}"
    return None


def check(config: dict[str, Any]) -> list[str]:
    """Problems with a web connector's config, one message per bad key."""
    problems: list[str] = []
    for key in ("urls", "sitemaps"):
        value = config.get(key, [])
        if not isinstance(value, list) or not all(_is_http_url(u) for u in value):
            problems.append(f"{key}: must be a list of http(s) URLs")
    if not problems and not (config.get("urls") or config.get("sitemaps")):
        problems.append("urls: required: give seed urls, sitemaps, or both")
    hosts = config.get("allowed_hosts", [])
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h and "/" not in h for h in hosts):
        problems.append("allowed_hosts: must be a list of host names, e.g. ['docs.example.com']")
    if not isinstance(config.get("allow_private_addresses", False), bool):
        problems.append("allow_private_addresses: must be true or false")
    for key, bound in BOUNDS.items():
        if key in config and (problem := _check_number(key, config[key], bound)):
            problems.append(problem)
    return problems
