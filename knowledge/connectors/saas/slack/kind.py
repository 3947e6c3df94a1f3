"""The Slack kind's config, and a sync: the workspace's accounts, then each channel the app is in."""

from __future__ import annotations

from typing import Any

from knowledge.connectors.base import ConnectorKind
from knowledge.connectors.saas.client import ApiClient, ApiError
from knowledge.connectors.saas.common import DEFAULT_MAX_PAGES, check_keys, check_positive, check_url
from knowledge.connectors.saas.slack.access import WorkspaceAccess
from knowledge.connectors.saas.slack.api import DEFAULT_API_URL, SlackApi
from knowledge.connectors.saas.slack.content import ChannelContent
from knowledge.connectors.types import Listing, SourceAcl, SourceError, SourceState

POLICIES = ("members", "workspace")


def _channels(value: object) -> str | None:
    if not isinstance(value, list) or not all(isinstance(c, str) and c for c in value):
        return 'must be a list of channel names or ids, e.g. ["general", "C0123456"]'
    return None


CHECKS = {
    "api_url": check_url,
    "channels": _channels,
    "days": check_positive,
    "public_channels": lambda v: None if v in POLICIES else f"must be one of {list(POLICIES)}",
    "max_pages": check_positive,
    "user_groups": lambda v: None if isinstance(v, bool) else "must be true or false",
}


class SlackKind(ConnectorKind):
    name = "slack"
    label = "Slack workspace"
    config_keys = frozenset(CHECKS)
    credential_label = (
        "Bot token (xoxb-) with channels:history, groups:history, channels:read, groups:read,"
        " users:read and users:read.email (and usergroups:read for user_groups)"
    )
    syncs_permissions = True

    def check(self, config: dict[str, Any]) -> dict[str, str]:
        return check_keys(config, CHECKS)

    def list_source(
        self, config: dict[str, Any], state: SourceState | None = None, *, credential: str = ""
    ) -> Listing:
        listing = Listing()
        with _client(config, credential) as client:
            api = SlackApi(client, int(config.get("max_pages", DEFAULT_MAX_PAGES)))
            opened = _open(api, config, listing, state)
            if opened is None:
                return listing
            access, channels, url = opened
            content = ChannelContent(api, url, state, int(config.get("days", 90)))
            content.names = access.display
            for channel in channels:
                content.channel(channel, access.channel_acl(channel, listing), listing)
            _report_unmapped(access, listing)
        return listing

    def list_permissions(
        self, config: dict[str, Any], state: SourceState, *, credential: str = ""
    ) -> Listing:
        listing = Listing()
        with _client(config, credential) as client:
            api = SlackApi(client, int(config.get("max_pages", DEFAULT_MAX_PAGES)))
            opened = _open(api, config, listing, state)
            if opened is None:
                return listing
            access, channels, _ = opened
            acls = {str(c["id"]): access.channel_acl(c, listing) for c in channels}
            for external_id in state.external_ids():
                channel_id = external_id.split(":")[1] if ":" in external_id else ""
                if channel_id in acls:
                    listing.acls[external_id] = acls[channel_id]
                else:  # the channel is gone or the app left it: private until a sync prunes it
                    listing.acls[external_id] = SourceAcl()
                    listing.private.add(external_id)
            _report_unmapped(access, listing)
        return listing


def _client(config: dict[str, Any], credential: str) -> ApiClient:
    headers = {"Authorization": f"Bearer {credential}"} if credential else {}
    return ApiClient(str(config.get("api_url") or DEFAULT_API_URL), headers=headers)


def _open(
    api: SlackApi, config: dict[str, Any], listing: Listing, state: SourceState | None
) -> tuple[WorkspaceAccess, list[dict[str, Any]], str] | None:
    """The workspace's accounts and the channels to read; None (everything stored made private) when
    who may read what cannot be known."""
    try:
        auth = api.call("auth.test")
        access = WorkspaceAccess(api, str(auth["team_id"]), str(config.get("public_channels", "members")))
        access.load_users()
        channels = _wanted(api, config)
    except (ApiError, KeyError, TypeError) as exc:
        hint = " (check the bot token)" if isinstance(exc, ApiError) and exc.denied else ""
        message = f"the workspace could not be read: {exc}{hint}; its documents are private"
        listing.fail_unreadable(message, state)
        return None
    if str(config.get("public_channels", "members")) == "workspace":
        access.workspace_group(listing)
    if config.get("user_groups"):
        access.user_groups(listing, state)
    return access, channels, str(auth.get("url") or "")


def _wanted(api: SlackApi, config: dict[str, Any]) -> list[dict[str, Any]]:
    """The channels the app is a member of (it can read no other), narrowed to `channels` if set."""
    named = set(config.get("channels") or [])
    found = []
    for channel in api.items("conversations.list", "channels", types="public_channel,private_channel"):
        if not channel.get("is_member"):
            continue
        if named and not named & {str(channel.get("id")), str(channel.get("name"))}:
            continue
        found.append(channel)
    return found


def _report_unmapped(access: WorkspaceAccess, listing: Listing) -> None:
    if access.unmapped:
        shown = ", ".join(sorted(access.unmapped)[:20])
        listing.errors.append(
            SourceError(f"Slack members without an e-mail in this workspace ({shown}) are left out of ACLs")
        )
