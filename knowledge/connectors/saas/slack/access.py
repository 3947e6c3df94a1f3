"""Who may read a Slack channel: its members, synced as the group `slack:<team>/channel/<id>`
(or, for public channels under `public_channels: "workspace"`, every workspace member, the group
`slack:<team>/workspace`). Members are mapped to users by their profile e-mail."""

from __future__ import annotations

from typing import Any

from knowledge import names
from knowledge.connectors.saas.client import ApiError
from knowledge.connectors.saas.slack.api import SlackApi
from knowledge.connectors.types import Listing, SourceAcl, SourceError, SourceGroup


class WorkspaceAccess:
    def __init__(self, api: SlackApi, team_id: str, public_channels: str) -> None:
        self.api, self.team_id, self.public_channels = api, team_id, public_channels
        self.emails: dict[str, str] = {}
        self.display: dict[str, str] = {}  # user id -> the name messages are shown under
        self.ignored: set[str] = set()  # bots and deactivated accounts: members that read nothing
        self.unmapped: set[str] = set()

    def group(self, *parts: str) -> str:
        return "/".join([f"slack:{self.team_id}", *parts])

    def load_users(self) -> None:
        """Every account's e-mail (bots and deactivated accounts have none that counts)."""
        for user in self.api.items("users.list", "members"):
            email = (user.get("profile") or {}).get("email")
            self.display[str(user["id"])] = str(user.get("real_name") or user.get("name") or user["id"])
            if user.get("deleted") or user.get("is_bot"):
                self.ignored.add(str(user["id"]))
            elif isinstance(email, str) and "@" in email:
                self.emails[str(user["id"])] = names.user_id(email)

    def workspace_group(self, listing: Listing) -> str:
        name = self.group("workspace")
        listing.groups.append(SourceGroup(name=name, members=tuple(sorted(set(self.emails.values())))))
        return name

    def channel_acl(self, channel: dict[str, Any], listing: Listing) -> SourceAcl:
        if not channel.get("is_private") and self.public_channels == "workspace":
            return SourceAcl.of(groups=[self.group("workspace")])
        name = self.group("channel", str(channel["id"]))
        try:
            members = [
                str(m) for m in self.api.items("conversations.members", "members", channel=channel["id"])
            ]
        except (ApiError, KeyError, TypeError) as exc:
            listing.errors.append(SourceError(f"#{channel.get('name')}: members could not be read ({exc})"))
            listing.groups.append(SourceGroup(name=name, complete=False))
            return SourceAcl.of(groups=[name])
        mapped = [self.emails[m] for m in members if m in self.emails]
        self.unmapped.update(m for m in members if m not in self.emails and m not in self.ignored)
        listing.groups.append(SourceGroup(name=name, members=tuple(sorted(set(mapped)))))
        return SourceAcl.of(groups=[name])
