"""Who may read a Drive file: every one of its permissions (any role can read), as a policy:

- `user`: that e-mail;
- `group`: the group `gdrive:<domain>/group/<e-mail>`, its members (nested ones too) read from the
  Admin Directory;
- `domain`: the group `gdrive:<domain>/domain/<domain>`, every user of that domain in the Directory;
- `anyone` (public on the web, or anyone with the link): ignored under `anyone_with_link: "ignore"`
  (the default: a link is not an invitation), public under `"public"`.

A permission of a type this connector does not know, a user permission without an e-mail, or a
permission list that cannot be read makes the file private (fail closed). A group or domain whose
members cannot be read in full is synced as incomplete, so whatever names it becomes private.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from knowledge import names
from knowledge.connectors.saas.client import ApiError
from knowledge.connectors.saas.drive.api import ALL_DRIVES, DriveApi
from knowledge.connectors.types import Listing, SourceAcl, SourceError, SourceGroup

PERMISSION_FIELDS = "id,type,role,emailAddress,domain,allowFileDiscovery,deleted"
LINK_POLICIES = ("ignore", "public")


class Unknowable(Exception):
    """Who may read this file cannot be known in full: it is private."""


class DriveAccess:
    def __init__(self, api: DriveApi, domain: str, link_policy: str, listing: Listing) -> None:
        self.api, self.domain, self.link_policy, self.listing = api, domain.casefold(), link_policy, listing
        self.synced: set[str] = set()  # group names already read this run

    def group(self, *parts: str) -> str:
        return "/".join([f"gdrive:{self.domain}", *parts])

    def file_acl(self, file: dict[str, Any]) -> SourceAcl:
        """The file's ACL; Unknowable when it cannot be known in full."""
        permissions = file.get("permissions")
        if not isinstance(permissions, list):  # not inline (a shared drive, or not the owner's view)
            permissions = self._listed(str(file["id"]))
        users: list[str] = []
        groups: list[str] = []
        public = False
        for permission in permissions:
            if not isinstance(permission, dict):
                raise Unknowable("a permission that is not an object")
            if permission.get("deleted"):
                continue
            kind, email = permission.get("type"), str(permission.get("emailAddress") or "")
            if kind == "user":
                if "@" not in email:
                    raise Unknowable("a user permission without an e-mail")
                users.append(email)
            elif kind == "group":
                if "@" not in email:
                    raise Unknowable("a group permission without an e-mail")
                groups.append(self._group(email))
            elif kind == "domain":
                groups.append(self._domain(str(permission.get("domain") or "")))
            elif kind == "anyone":
                public = public or self.link_policy == "public"
            else:
                raise Unknowable(f"a permission of an unknown type {kind!r}")
        return SourceAcl.of(public=public, users=users, groups=groups)

    def _listed(self, file_id: str) -> list[dict[str, Any]]:
        try:
            return list(
                self.api.items(
                    f"drive/v3/files/{file_id}/permissions",
                    "permissions",
                    fields=f"nextPageToken,permissions({PERMISSION_FIELDS})",
                    pageSize=100,
                    **ALL_DRIVES,
                )
            )
        except ApiError as exc:
            raise Unknowable(f"its permissions could not be read ({exc})") from exc

    def _group(self, email: str) -> str:
        key = names.user_id(email)
        name = self.group("group", key)
        self._sync(
            name,
            f"group {key}",
            lambda: self._members(f"admin/directory/v1/groups/{quote(key)}/members"),
        )
        return name

    def _domain(self, domain: str) -> str:
        domain = domain.casefold()
        if not domain:
            raise Unknowable("a domain permission without a domain")
        name = self.group("domain", domain)
        self._sync(name, f"domain {domain}", lambda: self._domain_users(domain))
        return name

    def _sync(self, name: str, label: str, read: Any) -> None:
        if name in self.synced:
            return
        self.synced.add(name)
        try:
            members = read()
        except (ApiError, Unknowable, KeyError, TypeError) as exc:
            self.listing.errors.append(SourceError(f"{label}: members could not be read in full ({exc})"))
            self.listing.groups.append(SourceGroup(name=name, complete=False))
            return
        self.listing.groups.append(SourceGroup(name=name, members=tuple(sorted(set(members)))))

    def _members(self, path: str) -> list[str]:
        found = []
        for member in self.api.items(path, "members", includeDerivedMembership="true", maxResults=200):
            kind = member.get("type")
            if kind == "GROUP":
                continue  # its members are listed too (derived membership)
            if kind != "USER":
                raise Unknowable(f"a member of an unknown type {kind!r}")
            if member.get("status", "ACTIVE") == "ACTIVE" and "@" in str(member.get("email") or ""):
                found.append(names.user_id(str(member["email"])))
        return found

    def _domain_users(self, domain: str) -> list[str]:
        users = self.api.items("admin/directory/v1/users", "users", domain=domain, maxResults=500)
        return [
            names.user_id(str(u["primaryEmail"]))
            for u in users
            if not u.get("suspended") and "@" in str(u.get("primaryEmail") or "")
        ]
