"""Query-string parsing: bounded integers, and unknown parameters refused (a typo must not widen a filter)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rest_framework.request import Request

from knowledge.errors import InvalidInput

MAX_INT = 2**63 - 1  # PostgreSQL bigint
SLUG = re.compile(r"[-a-zA-Z0-9_]+")


def query_int(request: Request, name: str, *, minimum: int = 0, maximum: int = MAX_INT) -> int | None:
    """An integer query parameter within bounds, or None when absent."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit()) or not minimum <= int(raw) <= maximum:
        raise InvalidInput(f"{name} must be an integer from {minimum} to {maximum}", field=name)
    return int(raw)


def query_slug(request: Request, name: str) -> str | None:
    """A slug query parameter, or None when absent."""
    raw = request.query_params.get(name)
    if raw is not None and not SLUG.fullmatch(raw):
        raise InvalidInput(f"{name} must be a slug (letters, digits, '-' and '_')", field=name)
    return raw


def reject_unknown_params(request: Request, allowed: Iterable[str]) -> None:
    unknown = sorted(set(request.query_params) - set(allowed))
    if unknown:
        raise InvalidInput(f"unknown query parameter {unknown[0]!r}", field=unknown[0])
