"""Confluence Cloud calls: collections follow `_links.next` (v2 cursors, v1 offsets) up to a page limit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from knowledge.connectors.saas.client import ApiClient, ApiError, PagingCapped


class ConfluenceApi:
    def __init__(self, client: ApiClient, max_pages: int) -> None:
        self.client = client
        self.max_pages = max_pages

    def get(self, path: str, **params: Any) -> dict[str, Any]:
        body = self.client.get(f"wiki/{path}", params).body
        if not isinstance(body, dict):
            raise ApiError(f"{path}: the body is not a JSON object")
        return body

    def items(self, path: str, **params: Any) -> Iterator[dict[str, Any]]:
        """Every result of a collection; PagingCapped past `max_pages` pages."""
        body = self.get(path, **params)
        for _ in range(self.max_pages):
            results = body.get("results")
            if not isinstance(results, list):
                raise ApiError(f"{path}: 'results' is not a list")
            yield from results
            following = (body.get("_links") or {}).get("next")
            if not following:
                return
            # v2 links start with /wiki/api/v2; v1 links are relative to /wiki.
            link = str(following).lstrip("/").removeprefix("wiki/")
            body = self.client.get(f"wiki/{link}").body
            if not isinstance(body, dict):
                raise ApiError(f"{path}: the body is not a JSON object")
        raise PagingCapped(f"{path}: more than {self.max_pages} pages")
