"""A Slack Web API stub: auth.test, users.list, conversations.list / members / history / replies,
cursor-paged `page_size` items at a time (`response_metadata.next_cursor`), answering `ok: false`
bodies for a bad token or an unknown channel as Slack does (HTTP 200)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from knowledge.source_stubs.server import Reply, Request, StubServer

TOKEN = "xoxb-stub-0123456789"


@dataclass
class Channel:
    name: str
    members: list[str]
    is_private: bool = False
    is_member: bool = True
    messages: list[dict[str, Any]] = field(default_factory=list)  # top-level, oldest first
    replies: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # thread ts -> replies


@dataclass
class SlackWorld:
    team_id: str = "T0ACME"
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    channels: dict[str, Channel] = field(default_factory=dict)
    page_size: int = 2
    token: str = TOKEN
    usergroups: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # id -> (handle, user ids)
    usergroups_scope: bool = True  # False: the token lacks usergroups:read

    def stub(self) -> StubServer:
        return StubServer(answer=self.answer)

    def user(self, user_id: str, name: str, email: str | None, **flags: Any) -> None:
        profile = {"real_name": name.title(), **({"email": email} if email else {})}
        self.users[user_id] = {
            "id": user_id,
            "name": name,
            "real_name": name.title(),
            "profile": profile,
            **flags,
        }

    def post(self, channel_id: str, user: str, text: str, ts: float) -> str:
        stamp = f"{ts:.6f}"
        self.channels[channel_id].messages.append(
            {"type": "message", "user": user, "text": text, "ts": stamp}
        )
        return stamp

    def reply(self, channel_id: str, thread: str, user: str, text: str, ts: float) -> None:
        channel = self.channels[channel_id]
        stamp = f"{ts:.6f}"
        channel.replies.setdefault(thread, []).append(
            {"type": "message", "user": user, "text": text, "ts": stamp, "thread_ts": thread}
        )
        parent = next(m for m in channel.messages if m["ts"] == thread)
        parent.update(thread_ts=thread, reply_count=len(channel.replies[thread]), latest_reply=stamp)

    # --- dispatch -------------------------------------------------------------------------------------
    def answer(self, request: Request) -> Reply:
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return Reply(body={"ok": False, "error": "invalid_auth"})
        method = request.path.rsplit("/", 1)[-1]
        handler = getattr(self, "m_" + method.replace(".", "_"), None)
        if handler is None:
            return Reply(body={"ok": False, "error": "unknown_method"})
        reply: Reply = handler(request.query)
        return reply

    def paged(self, key: str, items: list[Any], query: dict[str, str], **extra: Any) -> Reply:
        start = int(query.get("cursor") or 0)
        end = start + self.page_size
        cursor = str(end) if end < len(items) else ""
        body = {"ok": True, key: items[start:end], "response_metadata": {"next_cursor": cursor}, **extra}
        return Reply(body=body)

    def channel(self, query: dict[str, str]) -> Channel | None:
        return self.channels.get(query.get("channel", ""))

    def m_auth_test(self, query: dict[str, str]) -> Reply:
        body = {"ok": True, "url": "https://acme.slack.example/", "team": "Acme", "team_id": self.team_id}
        return Reply(body={**body, "user": "kb-bot", "user_id": "UBOT", "bot_id": "B1"})

    def m_usergroups_list(self, query: dict[str, str]) -> Reply:
        if not self.usergroups_scope:
            return Reply(body={"ok": False, "error": "missing_scope", "needed": "usergroups:read"})
        groups = [
            {"id": gid, "team_id": self.team_id, "handle": handle, "name": handle.title(), "date_delete": 0}
            | ({"users": users} if query.get("include_users") in {"true", "True", "1"} else {})
            for gid, (handle, users) in self.usergroups.items()
        ]
        return Reply(body={"ok": True, "usergroups": groups})

    def m_users_list(self, query: dict[str, str]) -> Reply:
        return self.paged("members", list(self.users.values()), query)

    def m_conversations_list(self, query: dict[str, str]) -> Reply:
        items = [
            {
                "id": cid,
                "name": c.name,
                "is_channel": True,
                "is_private": c.is_private,
                "is_member": c.is_member,
                "is_archived": False,
                "num_members": len(c.members),
            }
            for cid, c in self.channels.items()
        ]
        return self.paged("channels", items, query)

    def m_conversations_members(self, query: dict[str, str]) -> Reply:
        channel = self.channel(query)
        if channel is None:
            return Reply(body={"ok": False, "error": "channel_not_found"})
        return self.paged("members", channel.members, query)

    def m_conversations_history(self, query: dict[str, str]) -> Reply:
        channel = self.channel(query)
        if channel is None or not channel.is_member:
            return Reply(body={"ok": False, "error": "not_in_channel" if channel else "channel_not_found"})
        oldest = float(query.get("oldest") or 0)
        items = [m for m in reversed(channel.messages) if float(m["ts"]) >= oldest]  # newest first
        return self.paged("messages", items, query, has_more=False)

    def m_conversations_replies(self, query: dict[str, str]) -> Reply:
        channel = self.channel(query)
        if channel is None:
            return Reply(body={"ok": False, "error": "channel_not_found"})
        parent = [m for m in channel.messages if m["ts"] == query.get("ts")]
        if not parent:
            return Reply(body={"ok": False, "error": "thread_not_found"})
        return self.paged("messages", parent + channel.replies.get(query["ts"], []), query)
