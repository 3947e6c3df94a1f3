"""Config checks and identity mapping the hosted-source kinds share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from knowledge import names

DEFAULT_MAX_PAGES = 1000


def check_url(value: object) -> str | None:
    if not isinstance(value, str) or not value.startswith(("https://", "http://")):
        return "must be an http(s) URL"
    return None


def check_bool(value: object) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def check_positive(value: object) -> str | None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        return "must be a positive integer"
    return None


def check_emails(value: object) -> str | None:
    """A mapping of a source's account names to e-mail addresses."""
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and "@" in v for k, v in value.items()
    ):
        return 'must map account names to e-mail addresses, e.g. {"octocat": "octo@example.com"}'
    return None


def check_keys(
    config: dict[str, Any], checks: Mapping[str, Callable[[object], str | None]]
) -> dict[str, str]:
    """The first problem among the keys present in `config`, as the form's `config` error."""
    for key, check in checks.items():
        if key in config:
            problem = check(config[key])
            if problem:
                return {"config": f"{key}: {problem}"}
    return {}


class EmailBook:
    """Account name -> e-mail: the connector's `emails` mapping first, then what `lookup` finds (cached
    for the run). Names without an e-mail are collected, so the run can report them."""

    def __init__(self, configured: dict[str, str], lookup: Callable[[str], str | None]) -> None:
        self.configured = {k.casefold(): v for k, v in configured.items()}
        self.lookup = lookup
        self.cache: dict[str, str | None] = {}
        self.unmapped: set[str] = set()

    def email(self, account: str) -> str | None:
        key = account.casefold()
        if key in self.configured:
            return names.user_id(self.configured[key])
        if key not in self.cache:
            found = self.lookup(account)
            self.cache[key] = names.user_id(found) if found and "@" in found else None
        if self.cache[key] is None:
            self.unmapped.add(account)
        return self.cache[key]

    def emails(self, accounts: list[str]) -> list[str]:
        return [e for e in map(self.email, accounts) if e]
