"""A channel's documents: each thread (a message with replies) is one document, the other messages of
a day are one day document. Only the last `days` days are read each sync; older documents are kept
as they are (with the channel's current ACL), and a thread is re-read only when its latest reply
changed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from knowledge.connectors.saas.client import ApiError
from knowledge.connectors.saas.slack.api import SlackApi
from knowledge.connectors.types import Listing, SourceAcl, SourceDocument, SourceState


class ChannelContent:
    def __init__(self, api: SlackApi, base_url: str, state: SourceState | None, days: int) -> None:
        self.api, self.base_url, self.state = api, base_url.rstrip("/"), state
        start = datetime.now(UTC) - timedelta(days=days)  # from midnight, so every day read is whole
        self.oldest = start.replace(hour=0, minute=0, second=0, microsecond=0)
        self.names: dict[str, str] = {}  # user id -> display name, filled from users.list

    def channel(self, channel: dict[str, Any], acl: SourceAcl, listing: Listing) -> None:
        channel_id = str(channel["id"])
        try:
            messages = list(
                self.api.items(
                    "conversations.history",
                    "messages",
                    channel=channel_id,
                    oldest=f"{self.oldest.timestamp():.6f}",
                )
            )
        except (ApiError, KeyError, TypeError) as exc:
            listing.fail_listing(
                f"#{channel.get('name')}: history could not be read ({exc}): nothing is pruned"
            )
            self._keep_older(channel_id, acl, listing, everything=True)
            return
        days: dict[str, list[dict[str, Any]]] = {}
        for message in messages:
            if not isinstance(message, dict) or message.get("subtype") in {"channel_join", "channel_leave"}:
                continue
            if int(message.get("reply_count") or 0) > 0:
                self._thread(channel, message, acl, listing)
            elif not message.get("thread_ts") or message.get("thread_ts") == message.get("ts"):
                days.setdefault(_day(message), []).append(message)
        for day, day_messages in days.items():
            self._day(channel, day, day_messages, acl, listing)
        self._keep_older(channel_id, acl, listing)

    def _thread(
        self, channel: dict[str, Any], parent: dict[str, Any], acl: SourceAcl, listing: Listing
    ) -> None:
        channel_id, ts = str(channel["id"]), str(parent["ts"])
        external_id = f"thread:{channel_id}:{ts}"
        latest = str(parent.get("latest_reply") or "")
        stored = self.state.metadata(external_id) if self.state is not None else None
        if latest and stored is not None and stored.get("latest_reply") == latest:
            listing.keep_with_acl(external_id, acl)
            return
        try:
            replies = list(self.api.items("conversations.replies", "messages", channel=channel_id, ts=ts))
        except (ApiError, KeyError, TypeError) as exc:
            listing.fail_item(external_id, f"replies could not be read ({exc})")
            listing.acls[external_id] = acl
            return
        text = "\n".join(self._line(m) for m in replies if isinstance(m, dict))
        title = f"#{channel.get('name')}: {_first_words(str(parent.get('text') or ''))}"
        meta = {
            "kind": "thread",
            "channel": channel_id,
            "ts": ts,
            "latest_reply": latest,
            "day": _day(parent),
        }
        self._add(listing, external_id, text, title, self._link(channel_id, ts), meta, acl)

    def _day(
        self,
        channel: dict[str, Any],
        day: str,
        messages: list[dict[str, Any]],
        acl: SourceAcl,
        listing: Listing,
    ) -> None:
        channel_id = str(channel["id"])
        ordered = sorted(messages, key=lambda m: float(m.get("ts") or 0))
        text = "\n".join(self._line(m) for m in ordered)
        meta = {"kind": "day", "channel": channel_id, "day": day}
        link = self._link(channel_id, str(ordered[0].get("ts", "")))
        self._add(
            listing, f"day:{channel_id}:{day}", text, f"#{channel.get('name')} on {day}", link, meta, acl
        )

    def _keep_older(
        self, channel_id: str, acl: SourceAcl, listing: Listing, *, everything: bool = False
    ) -> None:
        """Documents of this channel from before the window (or all of them, when the history failed)
        are still in Slack: keep them, under the channel's current ACL."""
        if self.state is None:
            return
        cutoff = self.oldest.date().isoformat()
        written = listing.seen
        for external_id in self.state.external_ids():
            if external_id in written or external_id.split(":")[1:2] != [channel_id]:
                continue
            stored = self.state.metadata(external_id) or {}
            if everything or str(stored.get("day", "")) < cutoff:
                listing.keep_with_acl(external_id, acl)

    def _line(self, message: dict[str, Any]) -> str:
        who = self.names.get(str(message.get("user", "")), str(message.get("user") or "someone"))
        when = datetime.fromtimestamp(float(message.get("ts") or 0), UTC).strftime("%Y-%m-%d %H:%M")
        return f"[{when}] {who}: {message.get('text') or ''}"

    def _link(self, channel_id: str, ts: str) -> str:
        return f"{self.base_url}/archives/{channel_id}/p{ts.replace('.', '')}" if self.base_url else ""

    def _add(
        self,
        listing: Listing,
        external_id: str,
        text: str,
        title: str,
        url: str,
        meta: dict[str, Any],
        acl: SourceAcl,
    ) -> None:
        if not text.strip():
            return
        listing.documents.append(
            SourceDocument(
                external_id=external_id,
                content=text,
                title=title[:500],
                source_url=url,
                metadata=meta,
                acl=acl,
            )
        )


def _day(message: dict[str, Any]) -> str:
    return datetime.fromtimestamp(float(message.get("ts") or 0), UTC).date().isoformat()


def _first_words(text: str, count: int = 8) -> str:
    words = text.split()
    return " ".join(words[:count]) + ("…" if len(words) > count else "")
