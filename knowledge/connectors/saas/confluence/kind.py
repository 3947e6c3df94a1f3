"""The Confluence kind's config, and a sync: the site's spaces, each one's readers, then its pages."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import urlsplit

from knowledge.connectors.base import ConnectorKind
from knowledge.connectors.extract.sandbox import Sandbox
from knowledge.connectors.saas.client import ApiClient, ApiError
from knowledge.connectors.saas.common import (
    DEFAULT_MAX_PAGES,
    EmailBook,
    check_bool,
    check_emails,
    check_keys,
    check_positive,
    check_url,
)
from knowledge.connectors.saas.confluence.access import Principals, SiteAccess, Unknowable
from knowledge.connectors.saas.confluence.api import ConfluenceApi
from knowledge.connectors.saas.confluence.content import SpaceContent, _chain, blogposts
from knowledge.connectors.types import Listing, SourceAcl, SourceError, SourceState

DEFAULT_MAX_ATTACHMENT_BYTES = 20_000_000


def _spaces(value: object) -> str | None:
    if not isinstance(value, list) or not all(isinstance(k, str) and k for k in value):
        return 'must be a list of space keys, e.g. ["ENG", "HR"]'
    return None


CHECKS = {
    "spaces": _spaces,
    "attachments": check_bool,
    "blogposts": check_bool,
    "max_attachment_bytes": check_positive,
    "emails": check_emails,
    "max_pages": check_positive,
}


class ConfluenceKind(ConnectorKind):
    name = "confluence"
    label = "Confluence Cloud"
    config_keys = frozenset({"site_url", *CHECKS})
    credential_label = "E-mail and API token of the account that reads, as email:token"
    syncs_permissions = True

    def check(self, config: dict[str, Any]) -> dict[str, str]:
        if check_url(config.get("site_url")):
            return {"config": "site_url: required: the site's URL, e.g. https://acme.atlassian.net"}
        return check_keys(config, CHECKS)

    def list_source(
        self, config: dict[str, Any], state: SourceState | None = None, *, credential: str = ""
    ) -> Listing:
        listing = Listing()
        with _client(config, credential) as client, Sandbox() as sandbox:
            api, access = _open(client, config, listing)
            content = SpaceContent(
                api,
                access,
                sandbox,
                state,
                site_url=str(config["site_url"]),
                attachments=bool(config.get("attachments", True)),
                blogposts=bool(config.get("blogposts", True)),
                max_bytes=int(config.get("max_attachment_bytes", DEFAULT_MAX_ATTACHMENT_BYTES)),
            )
            try:
                spaces = _wanted_spaces(api, config)
            except (ApiError, KeyError, TypeError) as exc:
                listing.fail_unreadable(f"the site's spaces could not be listed ({exc}){_hint(exc)}", state)
                return listing
            for space in spaces:
                try:
                    content.space(space, listing)
                except (ApiError, KeyError, TypeError) as exc:
                    listing.fail_listing(
                        f"space {space.get('key')}: could not be read in full ({exc}): nothing is pruned"
                    )
                    _space_private(listing, state, str(space.get("id")))
            _report_unmapped(access, listing)
        return listing

    def list_permissions(
        self, config: dict[str, Any], state: SourceState, *, credential: str = ""
    ) -> Listing:
        listing = Listing()
        with _client(config, credential) as client:
            api, access = _open(client, config, listing)
            try:
                acls = _page_acls(api, access, config, listing)
            except (ApiError, KeyError, TypeError) as exc:
                listing.fail_unreadable(f"permissions could not be read ({exc}){_hint(exc)}", state)
                return listing
            for external_id in state.external_ids():
                page_id = _page_of(external_id, state)
                if page_id in acls:
                    listing.acls[external_id] = acls[page_id]
                else:
                    listing.make_private(
                        external_id, "its page is gone or unreadable: private until the next sync"
                    )
            _report_unmapped(access, listing)
        return listing


def _client(config: dict[str, Any], credential: str) -> ApiClient:
    token = base64.b64encode(credential.encode()).decode()
    headers = {"Accept": "application/json", **({"Authorization": f"Basic {token}"} if credential else {})}
    return ApiClient(str(config["site_url"]), headers=headers)


def _open(client: ApiClient, config: dict[str, Any], listing: Listing) -> tuple[ConfluenceApi, SiteAccess]:
    api = ConfluenceApi(client, int(config.get("max_pages", DEFAULT_MAX_PAGES)))
    emails = EmailBook(config.get("emails", {}), lambda account: _email(api, account))
    site = urlsplit(str(config["site_url"])).netloc.casefold()
    return api, SiteAccess(api, site, emails, listing)


def _wanted_spaces(api: ConfluenceApi, config: dict[str, Any]) -> list[dict[str, Any]]:
    keys = config.get("spaces")
    params: dict[str, Any] = {"limit": 250, "status": "current"}
    if keys:
        params["keys"] = ",".join(keys)
    return list(api.items("api/v2/spaces", **params))


def _page_acls(
    api: ConfluenceApi, access: SiteAccess, config: dict[str, Any], listing: Listing
) -> dict[str, SourceAcl]:
    acls: dict[str, SourceAcl] = {}
    for space in _wanted_spaces(api, config):
        try:
            acls.update(_space_acls(api, access, space, listing, bool(config.get("blogposts", True))))
        except (ApiError, KeyError, TypeError) as exc:  # its pages are left out: they become private
            listing.errors.append(
                SourceError(f"space {space.get('key')}: its pages could not be listed ({exc})")
            )
    return acls


def _space_acls(
    api: ConfluenceApi, access: SiteAccess, space: dict[str, Any], listing: Listing, with_posts: bool
) -> dict[str, SourceAcl]:
    acls: dict[str, SourceAcl] = {}
    try:
        readers: Principals | None = access.space(str(space["id"]))
    except (ApiError, Unknowable) as exc:
        listing.errors.append(
            SourceError(f"space {space.get('key')}: its permissions could not be read ({exc})")
        )
        readers = None
    pages = {
        str(p["id"]): p for p in api.items(f"api/v2/spaces/{space['id']}/pages", limit=250, status="current")
    }
    chains = [(f"page:{page_id}", _chain(page_id, pages)) for page_id in pages]
    if with_posts:
        chains += [(f"blogpost:{p['id']}", [str(p["id"])]) for p in blogposts(api, str(space["id"]))]
    for external_id, chain in chains:
        content_id = external_id.partition(":")[2]
        try:
            if readers is None or chain is None:
                raise Unknowable("the space's permissions or the page's ancestors are unknown")
            acls[content_id] = access.page_acl(readers, chain)
        except Unknowable as exc:
            listing.make_private(external_id, str(exc))
            acls[content_id] = SourceAcl()
    return acls


def _page_of(external_id: str, state: SourceState) -> str:
    kind, _, identifier = external_id.partition(":")
    if kind in {"page", "blogpost"}:
        return identifier
    return str((state.metadata(external_id) or {}).get("page_id", ""))


def _email(api: ConfluenceApi, account_id: str) -> str | None:
    try:
        email = api.get("rest/api/user", accountId=account_id).get("email")
    except ApiError:
        return None
    return email if isinstance(email, str) else None


def _space_private(listing: Listing, state: SourceState | None, space_id: str) -> None:
    """A space that could not be read in full: its stored documents not listed now become private."""
    if state is None:
        return
    written = {d.external_id for d in listing.documents}
    for external_id in state.external_ids() - written:
        if str((state.metadata(external_id) or {}).get("space_id", "")) == space_id:
            listing.private.add(external_id)
            listing.acls[external_id] = SourceAcl()


def _hint(exc: Exception) -> str:
    return " (check the e-mail and API token)" if isinstance(exc, ApiError) and exc.denied else ""


def _report_unmapped(access: SiteAccess, listing: Listing) -> None:
    if access.emails.unmapped:
        shown = ", ".join(sorted(access.emails.unmapped)[:20])
        listing.errors.append(
            SourceError(
                f"no e-mail known for Confluence accounts {shown}: left out of ACLs; map them in 'emails'"
            )
        )
