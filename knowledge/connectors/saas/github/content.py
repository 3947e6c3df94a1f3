"""A GitHub repository's documents: Markdown files from the branch's tree (fetched only when their
blob changed; the tree itself asked for with its ETag, so an unchanged branch costs one 304), and
issues and pull requests with their comments (fetched only when updated; after a complete sync only
those updated `since` it are listed, unless the repository's count says one went missing)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from knowledge.connectors.saas.client import ApiClient, ApiError, PagingCapped, link_pages, rel_link
from knowledge.connectors.saas.github.cursor import GithubCursor, settings_fingerprint
from knowledge.connectors.saas.github.wiki import Wiki, WikiFile, WikiUnreadable
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
        fingerprint = settings_fingerprint(config, self.branch)
        self.previous = GithubCursor.parse(state.cursor() if state is not None else "", fingerprint)
        self.next = GithubCursor(fingerprint)  # what a complete listing leaves for the next sync

    def files(self, listing: Listing) -> None:
        etag = self.previous.tree_etag
        try:
            page = self.client.get(
                f"{self.path}/git/trees/{quote(self.branch, safe='')}",
                {"recursive": "1"},
                headers={"If-None-Match": etag} if etag else None,
            )
            if page.status == 304:  # the branch has not moved: every stored file stays as it is
                self.next.tree_etag = etag
                for external_id in self._stored("file:"):
                    self._keep(external_id, listing)
                return
            tree = page.body
            entries = [e for e in tree["tree"] if e.get("type") == "blob" and self._wanted(str(e["path"]))]
        except (ApiError, KeyError, TypeError) as exc:
            listing.fail_listing(f"the file tree of {self.branch!r} could not be read ({exc})")
            return
        if tree.get("truncated"):
            listing.fail_listing("GitHub truncated the file tree (too many files): nothing is pruned")
        errors = len(listing.errors)
        for entry in entries:
            self._file(entry, listing)
        if len(listing.errors) == errors:  # a file that failed is asked for again next time
            self.next.tree_etag = str(page.headers.get("etag", ""))

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

    def wiki(self, listing: Listing, web_url: str, token: str) -> None:
        """The wiki's pages (of the chosen extensions) as `wiki:<path>` documents, under the
        repository's ACL. No wiki: nothing (stored pages are pruned). Unreadable: the listing is
        incomplete and stored pages are kept."""
        if not self.repository.get("has_wiki"):
            return
        try:
            with Wiki(web_url, str(self.repository["full_name"]), token) as wiki:
                if wiki.clone():
                    for file in wiki.files():
                        if self._wanted(file.path):
                            self._wiki_page(wiki, file, listing)
        except WikiUnreadable as exc:
            listing.fail_listing(f"the wiki could not be read ({exc}): its pages are kept as they were")
            for external_id in self._stored("wiki:") - listing.seen:
                self._keep(external_id, listing)

    def _wiki_page(self, wiki: Wiki, file: WikiFile, listing: Listing) -> None:
        external_id = f"wiki:{file.path}"
        if file.size > self.max_bytes:
            listing.fail_item(external_id, f"larger than the {self.max_bytes}-byte limit")
            return
        if self._unchanged(external_id, "sha", file.sha):
            self._keep(external_id, listing)
            return
        text = wiki.read(file.sha)
        if not text.strip():
            listing.skip_item(external_id, "empty page")
            return
        name = file.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        url = f"{self.repository.get('html_url', '')}/wiki/{quote(name)}"
        meta = {"kind": "wiki", "path": file.path, "sha": file.sha}
        self._add(listing, external_id, text, name.replace("-", " "), url, meta)

    def threads(self, listing: Listing, *, issues: bool, pulls: bool) -> None:
        """Issues and pull requests (the issues endpoint lists both), newest update first."""
        if not (issues or pulls):
            return
        try:
            items = self._updated_items(listing) if issues and pulls else None
            if items is None:
                items = list(self._issue_items())
            errors = len(listing.errors)
            for item in items:
                is_pull = "pull_request" in item
                if pulls if is_pull else issues:
                    self._thread(item, listing, is_pull)
        except PagingCapped as exc:
            listing.fail_listing(f"issues: {exc}: nothing is pruned")
            return
        except (ApiError, KeyError, TypeError) as exc:
            listing.fail_listing(f"issues could not be listed ({exc})")
            return
        if len(listing.errors) == errors:  # an item that failed is listed again next time
            self.next.since = max([str(i.get("updated_at") or "") for i in items] + [self.previous.since])

    def _updated_items(self, listing: Listing) -> list[dict[str, Any]] | None:
        """After a complete sync: only the items updated since it, the others kept, provided the
        repository's count of issues and pull requests matches what that makes (else None: one was
        deleted or transferred, so everything is listed and the missing one pruned)."""
        since = self.previous.since
        if not since or self.state is None:
            return None
        updated = list(self._issue_items(since=since))
        stored = self._stored("issue:") | self._stored("pull:")
        listed = {f"{'pull' if 'pull_request' in i else 'issue'}:{i['number']}" for i in updated}
        if len(stored | listed) != self._count():
            return None
        for external_id in stored - listed:
            self._keep(external_id, listing)
        return updated

    def _count(self) -> int:
        """The repository's number of issues and pull requests: the last page's, one item a page."""
        page = self.client.get(f"{self.path}/issues", {"state": "all", "per_page": 1})
        last = rel_link(str(page.headers.get("link", "")), "last")
        if last is None:
            return len(page.body) if isinstance(page.body, list) else 0
        number = parse_qs(urlsplit(last).query).get("page", ["0"])[0]
        return int(number) if number.isdigit() else -1

    def _issue_items(self, since: str = "") -> Iterator[dict[str, Any]]:
        params = {"state": "all", "per_page": 100, "sort": "updated", "direction": "desc"}
        if since:
            params["since"] = since
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

    def _stored(self, prefix: str) -> set[str]:
        ids = self.state.external_ids() if self.state is not None else set()
        return {i for i in ids if i.startswith(prefix)}

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
