"""Who may read a GitHub repository: everyone for a public one; for a private one its direct
collaborators and its teams (team members synced as groups `github:<owner>/team/<slug>`); for an
internal one the organisation's members (group `github:<owner>/members`).

Anything that cannot be read in full makes the ACL unusable (None), and the repository's documents
private: never a partial list taken as the whole. A team whose member list fails is an incomplete
group, which makes whatever names it private.
"""

from __future__ import annotations

from typing import Any

from knowledge.connectors.saas.client import ApiClient, ApiError, link_pages
from knowledge.connectors.saas.common import EmailBook
from knowledge.connectors.types import Listing, SourceAcl, SourceError, SourceGroup

PER_PAGE = {"per_page": 100}


def group_name(owner: str, *parts: str) -> str:
    return "/".join([f"github:{owner.casefold()}", *parts])


class RepositoryAccess:
    def __init__(self, client: ApiClient, owner: str, repo: str, emails: EmailBook, max_pages: int) -> None:
        self.client, self.owner, self.repo = client, owner, repo
        self.emails = emails
        self.max_pages = max_pages

    def acl(self, repository: dict[str, Any], listing: Listing) -> SourceAcl | None:
        """The repository's ACL (its groups go into `listing.groups`); None when it cannot be read."""
        visibility = repository.get("visibility") or ("private" if repository.get("private") else "public")
        try:
            if visibility == "public":
                return SourceAcl(public=True)
            if visibility == "internal":
                members = self._logins(f"orgs/{self.owner}/members")
                name = group_name(self.owner, "members")
                listing.groups.append(SourceGroup(name=name, members=tuple(self.emails.emails(members))))
                return SourceAcl.of(groups=[name])
            if visibility != "private":
                listing.fail_listing(
                    f"unknown repository visibility {visibility!r}: its documents are private"
                )
                return None
            return self._private(listing)
        except (ApiError, KeyError, TypeError, AttributeError) as exc:
            listing.fail_listing(
                f"the repository's access could not be read ({exc}): its documents are private"
            )
            return None

    def _private(self, listing: Listing) -> SourceAcl:
        users = self._logins(f"repos/{self.owner}/{self.repo}/collaborators", affiliation="direct")
        teams = [t["slug"] for t in self._items(f"repos/{self.owner}/{self.repo}/teams")]
        groups = [self._team(slug, listing) for slug in teams]
        return SourceAcl.of(users=self.emails.emails(users), groups=groups)

    def _team(self, slug: str, listing: Listing) -> str:
        name = group_name(self.owner, "team", slug)
        try:
            members = self._logins(f"orgs/{self.owner}/teams/{slug}/members")
        except (ApiError, KeyError, TypeError, AttributeError) as exc:
            listing.errors.append(SourceError(f"team {slug}: its members could not be read ({exc})"))
            listing.groups.append(SourceGroup(name=name, complete=False))
            return name
        listing.groups.append(SourceGroup(name=name, members=tuple(self.emails.emails(members))))
        return name

    def _logins(self, path: str, **params: str) -> list[str]:
        return [str(item["login"]) for item in self._items(path, **params)]

    def _items(self, path: str, **params: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for page in link_pages(self.client, path, {**PER_PAGE, **params}, max_pages=self.max_pages):
            if not isinstance(page.body, list):
                raise ApiError(f"{path}: expected a list, got {type(page.body).__name__}")
            items.extend(page.body)
        return items
