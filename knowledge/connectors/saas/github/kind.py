"""The GitHub kind's config, and a sync: the repository, its access, then its documents."""

from __future__ import annotations

import re
from typing import Any

from knowledge.connectors.base import ConnectorKind
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
from knowledge.connectors.saas.github.access import RepositoryAccess
from knowledge.connectors.saas.github.content import RepositoryContent
from knowledge.connectors.types import Listing, SourceError, SourceState

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_WEB_URL = "https://github.com"  # where the wiki (a git repository) is cloned from
REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


def _extensions(value: object) -> str | None:
    if not isinstance(value, list) or not all(isinstance(e, str) and e.startswith(".") for e in value):
        return 'must be a list of file extensions, e.g. [".md", ".markdown"]'
    return None


CHECKS = {
    "api_url": check_url,
    "branch": lambda v: None if isinstance(v, str) and v else "must be a branch name",
    "extensions": _extensions,
    "issues": check_bool,
    "pull_requests": check_bool,
    "emails": check_emails,
    "max_file_bytes": check_positive,
    "max_pages": check_positive,
    "wiki": check_bool,
    "web_url": check_url,
}


class GithubKind(ConnectorKind):
    name = "github"
    label = "GitHub repository"
    config_keys = frozenset({"repository", *CHECKS})
    credential_label = (
        "Token with read access to the repository's contents, issues and pull requests"
        " (and the organisation's members and teams)"
    )
    syncs_permissions = True

    def check(self, config: dict[str, Any]) -> dict[str, str]:
        repository = config.get("repository")
        if not isinstance(repository, str) or not REPOSITORY.match(repository):
            return {"config": "repository: required: owner/name, e.g. octo-org/handbook"}
        return check_keys(config, CHECKS)

    def list_source(
        self, config: dict[str, Any], state: SourceState | None = None, *, credential: str = ""
    ) -> Listing:
        listing = Listing()
        with _client(config, credential) as client:
            repository, access = _open(client, config, listing)
            if repository is None:
                if state is not None:
                    listing.all_private(state.external_ids())
                return listing
            acl = access.acl(repository, listing)
            if acl is None and state is not None:
                listing.all_private(state.external_ids())
            content = RepositoryContent(client, repository, config, state, acl)
            content.files(listing)
            content.threads(
                listing, issues=config.get("issues", True), pulls=config.get("pull_requests", True)
            )
            if config.get("wiki", True):
                content.wiki(listing, str(config.get("web_url") or DEFAULT_WEB_URL), credential)
            listing.cursor = content.next.dump()  # stored only if the listing is complete
            _report_unmapped(access.emails, listing)
        return listing

    def list_permissions(
        self, config: dict[str, Any], state: SourceState, *, credential: str = ""
    ) -> Listing:
        listing = Listing()
        with _client(config, credential) as client:
            repository, access = _open(client, config, listing)
            acl = access.acl(repository, listing) if repository is not None else None
            if acl is None:
                listing.all_private(state.external_ids())
            else:
                listing.acls.update(dict.fromkeys(state.external_ids(), acl))
            _report_unmapped(access.emails, listing)
        return listing


def _client(config: dict[str, Any], credential: str) -> ApiClient:
    headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
    if credential:
        headers["Authorization"] = f"Bearer {credential}"
    return ApiClient(str(config.get("api_url") or DEFAULT_API_URL), headers=headers)


def _open(
    client: ApiClient, config: dict[str, Any], listing: Listing
) -> tuple[dict[str, Any] | None, RepositoryAccess]:
    owner, repo = str(config["repository"]).split("/", 1)
    emails = EmailBook(config.get("emails", {}), lambda login: _public_email(client, login))
    access = RepositoryAccess(client, owner, repo, emails, int(config.get("max_pages", DEFAULT_MAX_PAGES)))
    try:
        repository = client.get(f"repos/{owner}/{repo}").body
        if not isinstance(repository, dict) or "full_name" not in repository:
            raise ApiError("the repository's body is not a repository")
    except ApiError as exc:
        hint = (
            " (check the token)"
            if exc.denied
            else " (no such repository, or the token cannot see it)"
            if exc.gone
            else ""
        )
        listing.fail_listing(f"{owner}/{repo} could not be read: {exc}{hint}")
        return None, access
    return repository, access


def _public_email(client: ApiClient, login: str) -> str | None:
    try:
        body = client.get(f"users/{login}").body
    except ApiError:
        return None
    email = body.get("email") if isinstance(body, dict) else None
    return email if isinstance(email, str) else None


def _report_unmapped(emails: EmailBook, listing: Listing) -> None:
    """Accounts without a known e-mail are left out of ACLs (narrower, never wider); say which."""
    if emails.unmapped:
        shown = ", ".join(sorted(emails.unmapped)[:20])
        listing.errors.append(
            SourceError(
                f"no e-mail known for GitHub users {shown}: they are left out of ACLs;"
                " map them in config 'emails'"
            )
        )
