"""Who may read a Slack channel: its members, synced as the group `slack:<team>/channel/<id>`
(or, for public channels under `public_channels: "workspace"`, every workspace member, the group
`slack:<team>/workspace`), and the workspace's user groups when asked for. Members are mapped to
users by their profile e-mail."""

from __future__ import annotations

from typing import Any

from knowledge import names
from knowledge.connectors.saas.client import ApiError
from knowledge.connectors.saas.slack.api import SlackApi
from knowledge.connectors.types import Listing, SourceAcl, SourceError, SourceGroup, SourceState


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

    def user_groups(self, listing: Listing, state: SourceState | None) -> None:
        """The workspace's user groups as groups `slack:<team>/usergroup/<id>`: no channel's ACL
        names them, but an admin's ACL may. One that is disabled or gone is emptied; when they cannot
        be read, every one stored is emptied (fail closed), with an error on the run."""
        prefix = self.group("usergroup", "")
        stored = state.groups(prefix) if state is not None else set()
        try:
            found = self.api.call("usergroups.list", include_users=True, include_disabled=False)["usergroups"]
            current = {
                self.group("usergroup", str(g["id"])): [str(u) for u in g.get("users") or []]
                for g in found
                if not g.get("date_delete")
            }
        except (ApiError, KeyError, TypeError) as exc:
            hint = " (does the token have usergroups:read?)" if "scope" in str(exc) else ""
            listing.errors.append(
                SourceError(f"user groups could not be read ({exc}){hint}: their members are removed")
            )
            current = {}
        for name, members in sorted(current.items()):
            mapped = sorted({self.emails[m] for m in members if m in self.emails})
            listing.groups.append(SourceGroup(name=name, members=tuple(mapped)))
        listing.groups.extend(SourceGroup(name=name) for name in sorted(stored - set(current)))

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
