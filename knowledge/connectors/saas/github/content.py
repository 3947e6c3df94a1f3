"""A GitHub repository's documents: Markdown files from the branch's tree (fetched only when their
blob changed), and issues and pull requests with their comments (fetched only when updated)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from knowledge.connectors.saas.client import ApiClient, ApiError, PagingCapped, link_pages
from knowledge.connectors.types import Listing, SourceAcl, SourceDocument, SourceState

PRIVATE = SourceAcl()


class RepositoryContent:
    def __init__(
        self,
        client: ApiClient,
        repository: dict[str, Any],
        config: dict[str, Any],
        state: SourceState | None,
        acl: SourceAcl | None,
    ) -> None:
        self.client, self.repository, self.state = client, repository, state
        self.path = f"repos/{repository['full_name']}"
        self.branch = str(config.get("branch") or repository.get("default_branch") or "main")
        self.extensions = tuple(e.casefold() for e in config.get("extensions", [".md", ".markdown"]))
        self.max_bytes = int(config.get("max_file_bytes", 1_000_000))
        self.max_pages = int(config.get("max_pages", 1000))
        self.acl = acl if acl is not None else PRIVATE
        self.readable = acl is not None

    def files(self, listing: Listing) -> None:
        try:
            tree = self.client.get(
                f"{self.path}/git/trees/{quote(self.branch, safe='')}", {"recursive": "1"}
            ).body
            entries = [e for e in tree["tree"] if e.get("type") == "blob" and self._wanted(str(e["path"]))]
        except (ApiError, KeyError, TypeError) as exc:
            listing.fail_listing(f"the file tree of {self.branch!r} could not be read ({exc})")
            return
        if tree.get("truncated"):
            listing.fail_listing("GitHub truncated the file tree (too many files): nothing is pruned")
        for entry in entries:
            self._file(entry, listing)

    def _wanted(self, path: str) -> bool:
        return path.casefold().endswith(self.extensions)

    def _file(self, entry: dict[str, Any], listing: Listing) -> None:
        path, sha = str(entry["path"]), str(entry.get("sha", ""))
        external_id = f"file:{path}"
        if int(entry.get("size") or 0) > self.max_bytes:
            listing.fail_item(external_id, f"larger than the {self.max_bytes}-byte limit")
            return
        if self._unchanged(external_id, "sha", sha):
            self._keep(external_id, listing)
            return
        try:
            blob = self.client.get(f"{self.path}/git/blobs/{sha}").body
            text = base64.b64decode(blob["content"]).decode("utf-8", errors="replace")
        except (ApiError, KeyError, TypeError, ValueError) as exc:
            listing.fail_item(external_id, f"could not be read ({exc})")
            return
        if not text.strip():
            listing.skip_item(external_id, "empty file")
            return
        url = f"{self.repository.get('html_url', '')}/blob/{quote(self.branch)}/{quote(path)}"
        self._add(
            listing, external_id, text, _title(text, path), url, {"kind": "file", "path": path, "sha": sha}
        )

    def threads(self, listing: Listing, *, issues: bool, pulls: bool) -> None:
        """Issues and pull requests (the issues endpoint lists both), newest update first."""
        if not (issues or pulls):
            return
        try:
            for item in self._issue_items():
                is_pull = "pull_request" in item
                if pulls if is_pull else issues:
                    self._thread(item, listing, is_pull)
        except PagingCapped as exc:
            listing.fail_listing(f"issues: {exc}: nothing is pruned")
        except (ApiError, KeyError, TypeError) as exc:
            listing.fail_listing(f"issues could not be listed ({exc})")

    def _issue_items(self) -> Iterator[dict[str, Any]]:
        params = {"state": "all", "per_page": 100, "sort": "updated", "direction": "desc"}
        for page in link_pages(self.client, f"{self.path}/issues", params, max_pages=self.max_pages):
            if not isinstance(page.body, list):
                raise ApiError(f"issues: expected a list, got {type(page.body).__name__}")
            yield from page.body

    def _thread(self, item: dict[str, Any], listing: Listing, is_pull: bool) -> None:
        number, updated = int(item["number"]), str(item.get("updated_at", ""))
        external_id = f"{'pull' if is_pull else 'issue'}:{number}"
        if self._unchanged(external_id, "updated_at", updated):
            self._keep(external_id, listing)
            return
        try:
            comments = self._comments(number) if item.get("comments") else []
        except (ApiError, KeyError, TypeError) as exc:
            listing.fail_item(external_id, f"comments could not be read ({exc})")
            return
        title = str(item.get("title") or f"#{number}")
        text = "\n\n".join([f"# {title}", str(item.get("body") or ""), *comments]).strip()
        meta = {"kind": "pull" if is_pull else "issue", "number": number, "updated_at": updated}
        self._add(listing, external_id, text, title, str(item.get("html_url", "")), meta)

    def _comments(self, number: int) -> list[str]:
        found = []
        path = f"{self.path}/issues/{number}/comments"
        for page in link_pages(self.client, path, {"per_page": 100}, max_pages=self.max_pages):
            for comment in page.body:
                author = comment.get("user", {}).get("login", "someone")
                found.append(
                    f"{author} commented on {comment.get('created_at', '')}:\n{comment.get('body') or ''}"
                )
        return found

    def _unchanged(self, external_id: str, key: str, value: str) -> bool:
        stored = self.state.metadata(external_id) if self.state is not None else None
        return bool(value) and stored is not None and stored.get(key) == value

    def _keep(self, external_id: str, listing: Listing) -> None:
        listing.keep_with_acl(external_id, self.acl)
        if not self.readable:
            listing.private.add(external_id)

    def _add(
        self, listing: Listing, external_id: str, text: str, title: str, url: str, meta: dict[str, Any]
    ) -> None:
        listing.documents.append(
            SourceDocument(
                external_id=external_id,
                content=text,
                title=title[:500],
                source_url=url,
                metadata=meta,
                acl=self.acl,
            )
        )
        if not self.readable:
            listing.private.add(external_id)


def _title(text: str, path: str) -> str:
    for line in text.splitlines()[:20]:
        if line.startswith("# "):
            return line[2:].strip() or path
    return path
