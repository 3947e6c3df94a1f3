"""Slack Web API calls: `ok: false` bodies become errors, cursors are followed up to a page limit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from knowledge.connectors.saas.client import ApiClient, ApiError, PagingCapped

DEFAULT_API_URL = "https://slack.com/api"


class SlackApi:
    def __init__(self, client: ApiClient, max_pages: int) -> None:
        self.client = client
        self.max_pages = max_pages

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        body = self.client.get(method, params).body
        if not isinstance(body, dict):
            raise ApiError(f"{method}: the body is not a JSON object")
        if not body.get("ok"):
            error = str(body.get("error") or "unknown error")
            status = (
                401 if error in {"invalid_auth", "not_authed", "token_revoked", "account_inactive"} else 0
            )
            raise ApiError(f"{method}: {error}", status=status)
        return body

    def items(self, method: str, key: str, **params: Any) -> Iterator[Any]:
        """Every item of a cursor-paged collection; PagingCapped past `max_pages`."""
        cursor = ""
        for _ in range(self.max_pages):
            body = self.call(method, limit=200, **params, **({"cursor": cursor} if cursor else {}))
            found = body.get(key)
            if not isinstance(found, list):
                raise ApiError(f"{method}: {key!r} is not a list")
            yield from found
            cursor = str((body.get("response_metadata") or {}).get("next_cursor") or "")
            if not cursor:
                return
        raise PagingCapped(f"{method}: more than {self.max_pages} pages")
