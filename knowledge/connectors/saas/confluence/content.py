"""A Confluence space's documents: its current pages and blog posts (storage-format XHTML extracted
as HTML) and their attachments (through the extraction sandbox). A page or attachment whose version is the
stored one is kept, not fetched again; its ACL is still re-read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from knowledge.connectors.extract.base import ExtractionError, format_for_media_type, format_for_suffix
from knowledge.connectors.extract.sandbox import Sandbox
from knowledge.connectors.saas.client import ApiError
from knowledge.connectors.saas.confluence.access import Principals, SiteAccess, Unknowable
from knowledge.connectors.saas.confluence.api import ConfluenceApi
from knowledge.connectors.types import Listing, SourceAcl, SourceDocument, SourceError, SourceState

PRIVATE = SourceAcl()


class SpaceContent:
    def __init__(
        self,
        api: ConfluenceApi,
        access: SiteAccess,
        sandbox: Sandbox,
        state: SourceState | None,
        *,
        site_url: str,
        attachments: bool,
        max_bytes: int,
        blogposts: bool = True,
    ) -> None:
        self.api, self.access, self.sandbox, self.state = api, access, sandbox, state
        self.site_url = site_url.rstrip("/")
        self.attachments = attachments
        self.max_bytes = max_bytes
        self.blogposts = blogposts

    def space(self, space: dict[str, Any], listing: Listing) -> None:
        space_id = str(space["id"])
        try:
            readers: Principals | None = self.access.space(space_id)
        except (ApiError, Unknowable, KeyError, TypeError) as exc:
            listing.errors.append(
                SourceError(f"space {space.get('key')}: its permissions could not be read ({exc})")
            )
            readers = None
        pages = {
            str(p["id"]): p
            for p in self.api.items(f"api/v2/spaces/{space_id}/pages", limit=250, status="current")
        }
        for page_id, page in pages.items():
            acl = self._acl(readers, _chain(page_id, pages), f"page:{page_id}", listing)
            self._content(page, acl, listing)
        for post in blogposts(self.api, space_id) if self.blogposts else ():
            acl = self._acl(readers, [str(post["id"])], f"blogpost:{post['id']}", listing)
            self._content(post, acl, listing, "blogpost")

    def _content(self, item: dict[str, Any], acl: SourceAcl, listing: Listing, kind: str = "page") -> None:
        self._page(item, acl, listing, kind)
        if self.attachments:
            self._attachments(item, acl, listing, kind)

    def _acl(
        self, readers: Principals | None, chain: list[str] | None, external_id: str, listing: Listing
    ) -> SourceAcl:
        try:
            if readers is None:
                raise Unknowable("the space's permissions are unknown")
            if chain is None:
                raise Unknowable(
                    "an ancestor is not a page of the space (a folder?), so its restrictions are unknown"
                )
            return self.access.page_acl(readers, chain)
        except Unknowable as exc:
            listing.make_private(external_id, str(exc))
            return PRIVATE

    def _page(self, page: dict[str, Any], acl: SourceAcl, listing: Listing, kind: str) -> None:
        page_id, version = str(page["id"]), _version(page)
        external_id = f"{kind}:{page_id}"
        if self._unchanged(external_id, version):
            listing.keep_with_acl(external_id, acl)
            return
        try:
            full = self.api.get(f"api/v2/{kind}s/{page_id}", **{"body-format": "storage"})
            storage = str(((full.get("body") or {}).get("storage") or {}).get("value") or "")
            extracted = self.sandbox.extract_bytes(storage.encode(), "html", "utf-8")
        except (ApiError, ExtractionError, TypeError) as exc:
            listing.fail_item(external_id, f"could not be read ({exc})")
            listing.acls[external_id] = acl
            return
        title = str(page.get("title") or extracted.title or page_id)
        text = extracted.text if extracted.text.strip() else title
        url = self.site_url + "/wiki" + str((full.get("_links") or {}).get("webui") or "")
        meta = {"kind": kind, "version": version, "space_id": str(page.get("spaceId", ""))}
        self._add(listing, external_id, f"# {title}\n\n{text}", title, url, meta, acl)

    def _attachments(self, page: dict[str, Any], acl: SourceAcl, listing: Listing, kind: str) -> None:
        page_id = str(page["id"])
        try:
            found = list(self.api.items(f"api/v2/{kind}s/{page_id}/attachments", limit=250))
        except (ApiError, KeyError, TypeError) as exc:
            listing.fail_listing(
                f"attachments of page {page_id} could not be listed ({exc}): nothing is pruned"
            )
            return
        for attachment in found:
            self._attachment(attachment, page, acl, listing)

    def _attachment(
        self, attachment: dict[str, Any], page: dict[str, Any], acl: SourceAcl, listing: Listing
    ) -> None:
        external_id, title = f"attachment:{attachment['id']}", str(attachment.get("title") or "")
        fmt = format_for_media_type(str(attachment.get("mediaType") or "")) or format_for_suffix(
            PurePosixPath(title).suffix
        )
        if fmt is None:
            return  # an image, an archive: nothing to extract
        version = _version(attachment)
        if int(attachment.get("fileSize") or 0) > self.max_bytes:
            listing.fail_item(external_id, f"larger than the {self.max_bytes}-byte limit")
            listing.acls[external_id] = acl
            return
        if self._unchanged(external_id, version):
            listing.keep_with_acl(external_id, acl)
            return
        try:
            data = self.api.client.download("wiki/" + str(attachment["downloadLink"]).lstrip("/"))
            extracted = self.sandbox.extract_bytes(data, fmt)
        except (ApiError, ExtractionError, KeyError) as exc:
            listing.fail_item(external_id, f"could not be read ({exc})")
            listing.acls[external_id] = acl
            return
        meta = {"kind": "attachment", "version": version, "page_id": str(page["id"]), "format": fmt}
        meta["space_id"] = str(page.get("spaceId", ""))
        url = self.site_url + "/wiki" + str(attachment.get("downloadLink") or "")
        self._add(listing, external_id, extracted.text, extracted.title or title, url, meta, acl)

    def _unchanged(self, external_id: str, version: int) -> bool:
        stored = self.state.metadata(external_id) if self.state is not None else None
        return version > 0 and stored is not None and stored.get("version") == version

    def _add(
        self,
        listing: Listing,
        external_id: str,
        text: str,
        title: str,
        url: str,
        meta: dict[str, Any],
        acl: SourceAcl,
    ) -> None:
        if not text.strip():
            listing.skip_item(external_id, "no text")
            return
        listing.documents.append(
            SourceDocument(
                external_id=external_id,
                content=text,
                title=title[:500],
                source_url=url,
                metadata=meta,
                acl=acl,
            )
        )


def blogposts(api: ConfluenceApi, space_id: str) -> Iterator[dict[str, Any]]:
    """The space's current blog posts (no parents: their own restrictions and the space's apply)."""
    return api.items(f"api/v2/spaces/{space_id}/blogposts", limit=250, status="current")


def _chain(page_id: str, pages: dict[str, dict[str, Any]]) -> list[str] | None:
    """The page and its ancestors, nearest first; None when an ancestor is not a page of the space."""
    chain, current = [], page_id
    while True:
        chain.append(current)
        page = pages[current]
        parent = page.get("parentId")
        if not parent:
            return chain
        if page.get("parentType", "page") != "page" or str(parent) not in pages or str(parent) in chain:
            return None
        current = str(parent)


def _version(item: dict[str, Any]) -> int:
    try:
        return int((item.get("version") or {}).get("number") or 0)
    except (TypeError, ValueError):
        return 0
