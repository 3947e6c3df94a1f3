"""Who may read a Confluence page: whoever may read its space (users, groups, anonymous access), and,
when the page or any of its ancestors carries read restrictions, only those of them who satisfy
every such restriction (Confluence intersects them).

An unrestricted page keeps the space's groups as groups, synced as `confluence:<site>/group/<id>`;
a restricted page's ACL is the users in the intersection. Anything unknown (a principal type this
connector does not understand, a restriction list longer than what was returned, an ancestor that is
not a page of the space, a group whose members failed) makes the page private.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from knowledge.connectors.saas.client import ApiError
from knowledge.connectors.saas.common import EmailBook
from knowledge.connectors.saas.confluence.api import ConfluenceApi
from knowledge.connectors.types import Listing, SourceAcl, SourceError, SourceGroup


class Unknowable(Exception):
    """Who may read this cannot be known in full: the content is private."""


@dataclass(frozen=True)
class Principals:
    users: frozenset[str] = frozenset()  # account ids
    groups: frozenset[str] = frozenset()  # group ids
    anonymous: bool = False


class SiteAccess:
    def __init__(self, api: ConfluenceApi, site: str, emails: EmailBook, listing: Listing) -> None:
        self.api, self.site, self.emails, self.listing = api, site, emails, listing
        self.members: dict[str, frozenset[str] | None] = {}  # group id -> account ids (None: unreadable)
        self.restrictions: dict[str, Principals | None] = {}  # content id -> read restrictions
        self.listed: set[str] = set()

    def group(self, group_id: str) -> str:
        return f"confluence:{self.site}/group/{group_id}"

    def space(self, space_id: str) -> Principals:
        users, groups, anonymous = set(), set(), False
        for permission in self.api.items(f"api/v2/spaces/{space_id}/permissions", limit=250):
            operation = permission.get("operation") or {}
            if operation.get("key") != "read" or operation.get("targetType") != "space":
                continue
            principal = permission.get("principal") or {}
            kind, identifier = principal.get("type"), str(principal.get("id") or "")
            if kind == "user":
                users.add(identifier)
            elif kind == "group":
                groups.add(identifier)
            elif kind == "anonymous":
                anonymous = True
            else:
                raise Unknowable(f"a space read permission for an unknown principal type {kind!r}")
        return Principals(frozenset(users), frozenset(groups), anonymous)

    def page_acl(self, space: Principals, chain: list[str]) -> SourceAcl:
        """The ACL of a page whose chain (itself, then its ancestors) is `chain`."""
        levels = [r for r in (self._restriction(content) for content in chain) if r.users or r.groups]
        if not levels:
            if space.anonymous:
                return SourceAcl(public=True)
            for group_id in space.groups:
                self._listed_group(group_id)
            return SourceAcl.of(
                users=self.emails.emails(sorted(space.users)), groups=[self.group(g) for g in space.groups]
            )
        readers = None if space.anonymous else self._expand(space)
        for level in levels:
            allowed = self._expand(level)
            readers = allowed if readers is None else readers & allowed
        return SourceAcl.of(users=self.emails.emails(sorted(readers or ())))

    def _restriction(self, content_id: str) -> Principals:
        if content_id not in self.restrictions:
            self.restrictions[content_id] = self._read_restriction(content_id)
        found = self.restrictions[content_id]
        if found is None:
            raise Unknowable(f"the read restrictions of {content_id} could not be read in full")
        return found

    def _read_restriction(self, content_id: str) -> Principals | None:
        path = f"rest/api/content/{content_id}/restriction/byOperation/read"
        try:
            body = self.api.get(path, expand="restrictions.user,restrictions.group")
            restrictions = body.get("restrictions") or {}
            users = _complete(restrictions.get("user") or {})
            groups = _complete(restrictions.get("group") or {})
        except (ApiError, KeyError, TypeError, ValueError) as exc:
            self.listing.errors.append(SourceError(f"restrictions of {content_id}: {exc}"))
            return None
        return Principals(
            frozenset(str(u["accountId"]) for u in users),
            frozenset(str(g.get("id") or g["name"]) for g in groups),
        )

    def _expand(self, principals: Principals) -> frozenset[str]:
        accounts = set(principals.users)
        for group_id in principals.groups:
            members = self._members(group_id)
            if members is None:
                raise Unknowable(f"the members of group {group_id} could not be read in full")
            accounts |= members
        return frozenset(accounts)

    def _members(self, group_id: str) -> frozenset[str] | None:
        if group_id not in self.members:
            try:
                found = self.api.items(f"rest/api/group/{group_id}/membersByGroupId", limit=200)
                self.members[group_id] = frozenset(str(m["accountId"]) for m in found)
            except (ApiError, KeyError, TypeError) as exc:
                self.listing.errors.append(
                    SourceError(f"group {group_id}: its members could not be read ({exc})")
                )
                self.members[group_id] = None
        return self.members[group_id]

    def _listed_group(self, group_id: str) -> None:
        """The group goes into the listing once, with its members (or as incomplete)."""
        if group_id in self.listed:
            return
        self.listed.add(group_id)
        members = self._members(group_id)
        name = self.group(group_id)
        if members is None:
            self.listing.groups.append(SourceGroup(name=name, complete=False))
        else:
            self.listing.groups.append(
                SourceGroup(name=name, members=tuple(self.emails.emails(sorted(members))))
            )


def _complete(part: dict[str, Any]) -> list[dict[str, Any]]:
    """A restriction list, refused when Confluence says it holds more than it returned."""
    results = part.get("results") or []
    if not isinstance(results, list):
        raise ValueError("restriction results are not a list")
    size = int(part.get("size", len(results)))
    if size > len(results):
        raise ValueError(
            f"{size} restrictions, {len(results)} returned (paged restrictions are not supported)"
        )
    return results
