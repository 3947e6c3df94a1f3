"""Drive v3 and Admin Directory calls on one origin, with the service account's current token, and
`nextPageToken` collections followed up to a page limit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from knowledge.connectors.saas.client import ApiClient, ApiError, PagingCapped
from knowledge.connectors.saas.drive.auth import TokenSource

DEFAULT_API_URL = "https://www.googleapis.com"
ALL_DRIVES = {"supportsAllDrives": "true"}


class DriveApi:
    def __init__(self, client: ApiClient, tokens: TokenSource, max_pages: int) -> None:
        self.client, self.tokens, self.max_pages = client, tokens, max_pages

    def _authorise(self) -> None:
        self.client.http.headers["Authorization"] = f"Bearer {self.tokens.token()}"

    def get(self, path: str, **params: Any) -> dict[str, Any]:
        self._authorise()
        body = self.client.get(path, params).body
        if not isinstance(body, dict):
            raise ApiError(f"{path}: the body is not a JSON object")
        return body

    def download(self, path: str, **params: Any) -> bytes:
        self._authorise()
        return self.client.download(path, params)

    def pages(self, path: str, **params: Any) -> Iterator[dict[str, Any]]:
        """Each page of a `nextPageToken` collection; PagingCapped past `max_pages`."""
        token = ""
        for _ in range(self.max_pages):
            body = self.get(path, **params, **({"pageToken": token} if token else {}))
            yield body
            token = str(body.get("nextPageToken") or "")
            if not token:
                return
        raise PagingCapped(f"{path}: more than {self.max_pages} pages")

    def items(self, path: str, key: str, **params: Any) -> Iterator[dict[str, Any]]:
        for body in self.pages(path, **params):
            found = body.get(key, [])
            if not isinstance(found, list) or not all(isinstance(i, dict) for i in found):
                raise ApiError(f"{path}: {key!r} is not a list of objects")
            yield from found
