"""A Confluence Cloud stub: REST v2 spaces, space permissions, pages (with storage bodies) and
attachments, plus the v1 read restrictions, group members and user look-ups. v2 collections page by
cursor, v1 ones by start/limit, both through `_links.next`; `page_size` items per page."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import Any

from knowledge.source_stubs.server import Reply, Request, StubServer

EMAIL, API_TOKEN = "reader@acme.example", "atl-stub-token"
CREDENTIAL = f"{EMAIL}:{API_TOKEN}"


@dataclass
class Page:
    title: str
    body: str  # storage-format XHTML
    space: str
    parent: str | None = None
    parent_type: str = "page"
    version: int = 1
    restricted_users: list[str] = field(default_factory=list)  # account ids
    restricted_groups: list[str] = field(default_factory=list)  # group ids
    attachments: dict[str, tuple[str, str, bytes]] = field(default_factory=dict)  # id -> (title, type, data)
    blogpost: bool = False  # a blog post of the space (no parent), listed apart from its pages


@dataclass
class ConfluenceWorld:
    spaces: dict[str, str] = field(default_factory=dict)  # space id -> key
    readers: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # space id -> (type, id)
    pages: dict[str, Page] = field(default_factory=dict)
    groups: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # id -> (name, account ids)
    accounts: dict[str, str | None] = field(default_factory=dict)  # account id -> e-mail (None: hidden)
    page_size: int = 2
    credential: str = CREDENTIAL

    def stub(self) -> StubServer:
        return StubServer(answer=self.answer)

    def answer(self, request: Request) -> Reply:
        expected = "Basic " + base64.b64encode(self.credential.encode()).decode()
        if request.headers.get("authorization") != expected:
            return Reply(401, {"statusCode": 401, "message": "Unauthorized; scope does not match"})
        routes: list[tuple[str, Any]] = [
            (r"^/wiki/api/v2/spaces$", lambda m: self.v2(request, self.space_items(request))),
            (r"^/wiki/api/v2/spaces/(\w+)/permissions$", lambda m: self.v2(request, self.permissions(m[1]))),
            (r"^/wiki/api/v2/spaces/(\w+)/pages$", lambda m: self.v2(request, self.page_items(m[1]))),
            (r"^/wiki/api/v2/pages/(\w+)$", lambda m: self.page(m[1])),
            (
                r"^/wiki/api/v2/spaces/(\w+)/blogposts$",
                lambda m: self.v2(request, self.page_items(m[1], True)),
            ),
            (r"^/wiki/api/v2/blogposts/(\w+)$", lambda m: self.page(m[1], True)),
            (
                r"^/wiki/api/v2/blogposts/(\w+)/attachments$",
                lambda m: self.v2(request, self.attachment_items(m[1])),
            ),
            (
                r"^/wiki/api/v2/pages/(\w+)/attachments$",
                lambda m: self.v2(request, self.attachment_items(m[1])),
            ),
            (r"^/wiki/download/attachments/(\w+)/(\w+)$", lambda m: self.download(m[1], m[2])),
            (
                r"^/wiki/rest/api/content/(\w+)/restriction/byOperation/read$",
                lambda m: self.restrictions(m[1]),
            ),
            (r"^/wiki/rest/api/group/(\w+)/membersByGroupId$", lambda m: self.members(request, m[1])),
            (r"^/wiki/rest/api/user$", lambda m: self.user(request)),
        ]
        for pattern, handler in routes:
            match = re.match(pattern, request.path)
            if match:
                reply: Reply = handler(match)
                return reply
        return Reply(404, {"statusCode": 404, "message": "No content found"})

    def v2(self, request: Request, items: list[dict[str, Any]] | Reply) -> Reply:
        if isinstance(items, Reply):
            return items
        start = int(request.query.get("cursor") or 0)
        end = start + self.page_size
        links = {}
        if end < len(items):
            query = "&".join(f"{k}={v}" for k, v in {**request.query, "cursor": str(end)}.items())
            links["next"] = f"{request.path}?{query}"
        return Reply(body={"results": items[start:end], "_links": links})

    def space_items(self, request: Request) -> list[dict[str, Any]]:
        keys = set(filter(None, request.query.get("keys", "").split(",")))
        return [
            {"id": sid, "key": key, "name": key.title(), "type": "global", "status": "current"}
            for sid, key in self.spaces.items()
            if not keys or key in keys
        ]

    def permissions(self, space_id: str) -> list[dict[str, Any]] | Reply:
        if space_id not in self.spaces:
            return Reply(404, {"message": "space not found"})
        found = [
            {
                "id": f"p{i}",
                "principal": {"type": kind, "id": pid},
                "operation": {"key": "read", "targetType": "space"},
            }
            for i, (kind, pid) in enumerate(self.readers.get(space_id, []))
        ]
        found.append(
            {
                "id": "pw",
                "principal": {"type": "user", "id": "admin1"},
                "operation": {"key": "delete", "targetType": "space"},
            }
        )
        return found

    def page_items(self, space_id: str, blogposts: bool = False) -> list[dict[str, Any]]:
        return [
            self.summary(pid, p)
            for pid, p in self.pages.items()
            if p.space == space_id and p.blogpost == blogposts
        ]

    def summary(self, page_id: str, page: Page) -> dict[str, Any]:
        return {
            "id": page_id,
            "status": "current",
            "title": page.title,
            "spaceId": page.space,
            "parentId": page.parent,
            "parentType": page.parent_type if page.parent else None,
            "version": {"number": page.version, "createdAt": "2026-11-01T10:00:00.000Z"},
            "_links": {
                "webui": f"/spaces/{self.spaces[page.space]}/{'blog' if page.blogpost else 'pages'}/{page_id}"
            },
        }

    def page(self, page_id: str, blogpost: bool = False) -> Reply:
        if page_id not in self.pages or self.pages[page_id].blogpost != blogpost:
            return Reply(404, {"message": "not found"})
        page = self.pages[page_id]
        body = {
            **self.summary(page_id, page),
            "body": {"storage": {"value": page.body, "representation": "storage"}},
        }
        return Reply(body=body)

    def attachment_items(self, page_id: str) -> list[dict[str, Any]] | Reply:
        if page_id not in self.pages:
            return Reply(404, {"message": "not found"})
        return [
            {
                "id": aid,
                "title": title,
                "mediaType": media,
                "fileSize": len(data),
                "version": {"number": 1},
                "downloadLink": f"/download/attachments/{page_id}/{aid}",
            }
            for aid, (title, media, data) in self.pages[page_id].attachments.items()
        ]

    def download(self, page_id: str, attachment_id: str) -> Reply:
        _, _, data = self.pages[page_id].attachments[attachment_id]
        return Reply(raw=data)

    def restrictions(self, content_id: str) -> Reply:
        if content_id not in self.pages:
            return Reply(404, {"message": "not found"})
        page = self.pages[content_id]
        users = [{"type": "known", "accountId": a} for a in page.restricted_users]
        groups = [{"type": "group", "name": self.groups[g][0], "id": g} for g in page.restricted_groups]
        part = lambda rs: {"results": rs, "start": 0, "limit": 100, "size": len(rs)}  # noqa: E731
        return Reply(body={"operation": "read", "restrictions": {"user": part(users), "group": part(groups)}})

    def members(self, request: Request, group_id: str) -> Reply:
        if group_id not in self.groups:
            return Reply(404, {"message": "group not found"})
        accounts = self.groups[group_id][1]
        start, limit = int(request.query.get("start") or 0), self.page_size
        results = [
            {"type": "known", "accountId": a, "email": self.accounts.get(a)}
            for a in accounts[start : start + limit]
        ]
        links = {}
        if start + limit < len(accounts):
            links["next"] = f"/rest/api/group/{group_id}/membersByGroupId?start={start + limit}&limit={limit}"
        return Reply(
            body={"results": results, "start": start, "limit": limit, "size": len(results), "_links": links}
        )

    def user(self, request: Request) -> Reply:
        account = request.query.get("accountId", "")
        if account not in self.accounts:
            return Reply(404, {"message": "user not found"})
        email = self.accounts[account]
        return Reply(
            body={"accountId": account, "publicName": account, **({"email": email} if email else {})}
        )
