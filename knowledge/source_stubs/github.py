"""A GitHub REST v3 stub: one repository with files (git trees and blobs), issues and pull requests
with comments, collaborators, teams and their members, org members and user profiles. Collections
are paged `page_size` items at a time with `Link: <...>; rel="next"` headers, whatever `per_page`
the client asks for, so paging is always exercised."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from knowledge.source_stubs.git_http import GitRepository
from knowledge.source_stubs.server import Reply, Request, StubServer

TOKEN = "ghp_stubtoken0123456789"


@dataclass
class Issue:
    title: str
    body: str
    updated_at: str = "2026-11-01T10:00:00Z"
    comments: list[tuple[str, str]] = field(default_factory=list)  # (login, body)
    pull: bool = False
    author: str = "octocat"


@dataclass
class GithubWorld:
    owner: str = "acme"
    repo: str = "handbook"
    visibility: str = "private"
    files: dict[str, str] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)
    collaborators: list[str] = field(default_factory=list)
    teams: dict[str, list[str]] = field(default_factory=dict)
    org_members: list[str] = field(default_factory=list)
    emails: dict[str, str | None] = field(default_factory=dict)  # login -> public e-mail
    page_size: int = 2
    token: str = TOKEN
    truncated: bool = False
    wiki: GitRepository | None = None  # the repository's wiki, served by git http-backend

    def stub(self) -> StubServer:
        server = StubServer(answer=lambda request: self.answer(request, server))
        return server

    # --- dispatch -------------------------------------------------------------------------------------
    def answer(self, request: Request, server: StubServer) -> Reply:
        if request.path.startswith(f"/{self.owner}/{self.repo}.wiki.git/"):
            return self.wiki_answer(request)
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return Reply(
                401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}
            )
        base = f"/repos/{self.owner}/{self.repo}"
        since = request.query.get("since", "")
        routes: list[tuple[str, Any]] = [
            (rf"^{base}$", lambda m: Reply(body=self.repository(server))),
            (rf"^{base}/git/trees/([^/]+)$", lambda m: self.tree(m.group(1), request)),
            (rf"^{base}/git/blobs/([0-9a-f]+)$", lambda m: self.blob(m.group(1))),
            (
                rf"^{base}/issues$",
                lambda m: self.paged(request, server, self.issue_items(server, since)),
            ),
            (rf"^{base}/issues/(\d+)/comments$", lambda m: self.comments(request, server, int(m.group(1)))),
            (
                rf"^{base}/collaborators$",
                lambda m: self.paged(request, server, self.accounts(self.collaborators)),
            ),
            (rf"^{base}/teams$", lambda m: self.paged(request, server, self.team_items())),
            (
                rf"^/orgs/{self.owner}/teams/([^/]+)/members$",
                lambda m: self.team_members(request, server, m.group(1)),
            ),
            (
                rf"^/orgs/{self.owner}/members$",
                lambda m: self.paged(request, server, self.accounts(self.org_members)),
            ),
            (r"^/users/([^/]+)$", lambda m: self.user(m.group(1))),
        ]
        for pattern, handler in routes:
            match = re.match(pattern, request.path)
            if match:
                reply: Reply = handler(match)
                return reply
        return Reply(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})

    def paged(self, request: Request, server: StubServer, items: list[Any]) -> Reply:
        page = int(request.query.get("page", "1"))
        size = min(self.page_size, int(request.query.get("per_page", "30")))
        start = (page - 1) * size
        headers = {}
        if start + size < len(items):

            def link(number: int) -> str:
                query = "&".join(f"{k}={v}" for k, v in {**request.query, "page": str(number)}.items())
                return f"{server.url}{request.path}?{query}"

            last = (len(items) + size - 1) // size
            headers["Link"] = f'<{link(page + 1)}>; rel="next", <{link(last)}>; rel="last"'
        return Reply(body=items[start : start + size], headers=headers)

    def wiki_answer(self, request: Request) -> Reply:
        """The wiki's git smart HTTP, with the token as `x-access-token` basic auth, as GitHub takes it."""
        expected = "Basic " + base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
        if request.headers.get("authorization") != expected:
            return Reply(401, raw=b"Unauthorized", headers={"WWW-Authenticate": 'Basic realm="GitHub"'})
        if self.wiki is None:
            return Reply(404, raw=b"Repository not found.", headers={"Content-Type": "text/plain"})
        return self.wiki.answer(request)

    # --- resources ------------------------------------------------------------------------------------
    def repository(self, server: StubServer) -> dict[str, Any]:
        return {
            "id": 1296269,
            "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
            "name": self.repo,
            "full_name": f"{self.owner}/{self.repo}",
            "owner": {"login": self.owner, "type": "Organization"},
            "private": self.visibility != "public",
            "visibility": self.visibility,
            "html_url": f"https://github.example/{self.owner}/{self.repo}",
            "url": f"{server.url}/repos/{self.owner}/{self.repo}",
            "default_branch": "main",
            "has_wiki": True,
            "has_issues": True,
        }

    def tree(self, branch: str, request: Request) -> Reply:
        if branch != "main":
            return Reply(404, {"message": "Not Found"})
        entries: list[dict[str, Any]] = [{"path": "docs", "mode": "040000", "type": "tree", "sha": "0" * 40}]
        for path, text in sorted(self.files.items()):
            data = text.encode()
            entries.append(
                {"path": path, "mode": "100644", "type": "blob", "sha": blob_sha(data), "size": len(data)}
            )
        body = {"sha": "f" * 40, "tree": entries, "truncated": self.truncated}
        etag = '"' + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32] + '"'
        if request.headers.get("if-none-match") == etag:  # GitHub: a 304 does not count against the limit
            return Reply(304, raw=b"", headers={"ETag": etag})
        return Reply(body=body, headers={"ETag": etag})

    def blob(self, sha: str) -> Reply:
        for text in self.files.values():
            data = text.encode()
            if blob_sha(data) == sha:
                encoded = base64.encodebytes(data).decode()  # GitHub wraps base64 at 60 columns
                return Reply(body={"sha": sha, "size": len(data), "encoding": "base64", "content": encoded})
        return Reply(404, {"message": "Not Found"})

    def issue_items(self, server: StubServer, since: str = "") -> list[dict[str, Any]]:
        found = []
        for number, issue in sorted(self.issues.items(), key=lambda kv: kv[1].updated_at, reverse=True):
            if since and issue.updated_at < since:  # `since`: updated at or after (ISO 8601, UTC)
                continue
            item: dict[str, Any] = {
                "number": number,
                "title": issue.title,
                "body": issue.body,
                "state": "open",
                "user": {"login": issue.author},
                "comments": len(issue.comments),
                "updated_at": issue.updated_at,
                "html_url": f"https://github.example/{self.owner}/{self.repo}/{_kind(issue)}/{number}",
            }
            if issue.pull:
                item["pull_request"] = {"url": f"{server.url}/repos/{self.owner}/{self.repo}/pulls/{number}"}
            found.append(item)
        return found

    def comments(self, request: Request, server: StubServer, number: int) -> Reply:
        if number not in self.issues:
            return Reply(404, {"message": "Not Found"})
        items = [
            {"id": i, "user": {"login": login}, "body": body, "created_at": "2026-11-02T09:00:00Z"}
            for i, (login, body) in enumerate(self.issues[number].comments)
        ]
        return self.paged(request, server, items)

    def accounts(self, logins: list[str]) -> list[dict[str, Any]]:
        return [{"login": login, "id": abs(hash(login)) % 10**6, "type": "User"} for login in logins]

    def team_items(self) -> list[dict[str, Any]]:
        return [{"slug": slug, "name": slug.title(), "permission": "pull"} for slug in self.teams]

    def team_members(self, request: Request, server: StubServer, slug: str) -> Reply:
        if slug not in self.teams:
            return Reply(404, {"message": "Not Found"})
        return self.paged(request, server, self.accounts(self.teams[slug]))

    def user(self, login: str) -> Reply:
        if login not in self.emails:
            return Reply(body={"login": login, "email": None})
        return Reply(body={"login": login, "name": login.title(), "email": self.emails[login]})


def blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 (git's object id)


def _kind(issue: Issue) -> str:
    return "pull" if issue.pull else "issues"
