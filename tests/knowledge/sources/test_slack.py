"""The Slack kind against a local server speaking Slack's Web API: thread and day documents, channel
members as groups, permission syncs, the read window, rate limits and outages."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from knowledge.models import Connector, Principal
from knowledge.services.connector_sync import connector_sync
from knowledge.services.documents import document_set_acl
from knowledge.services.permission_sync import connector_permissions_sync
from knowledge.source_stubs.server import StubServer, serving
from knowledge.source_stubs.slack import TOKEN, Channel, SlackWorld
from tests.knowledge.sources.helpers import live, source_connector, visible

pytestmark = pytest.mark.django_db
NOW = time.time()
TODAY = datetime.fromtimestamp(NOW - 120, UTC).date().isoformat()


def world() -> SlackWorld:
    source = SlackWorld()
    source.user("U1", "alice", "alice@example.com")
    source.user("U2", "bob", "Bob@Example.com")
    source.user("U3", "carol", "carol@example.com")
    source.user("U4", "dave", "dave@example.com")
    source.user("UB", "kb-bot", None, is_bot=True)
    source.channels = {
        "C1": Channel("general", ["U1", "U2", "UB"]),
        "C2": Channel("hr", ["U1", "U3", "UB"], is_private=True),
        "C3": Channel("random", ["U1", "U2", "U4"], is_member=False),
    }
    source.post("C1", "U1", "Where is the handbook?", NOW - 120)
    source.post("C1", "U2", "The handbook is on the wiki", NOW - 110)
    thread = source.post("C1", "U1", "Handbook release planning", NOW - 100)
    source.reply("C1", thread, "U2", "handbook ships Friday", NOW - 90)
    source.post("C2", "U3", "Salary bands handbook update", NOW - 80)
    source.post("C3", "U4", "random handbook chatter", NOW - 70)
    return source


@pytest.fixture
def slack() -> Iterator[tuple[SlackWorld, StubServer]]:
    source = world()
    with serving(source.stub()) as server:
        yield source, server


def connector_for(server: StubServer, **config: object) -> Connector:
    return source_connector("slack", {"api_url": server.url, **config}, TOKEN)


def thread_id(source: SlackWorld) -> str:
    parent = next(m for m in source.channels["C1"].messages if m.get("reply_count"))
    return f"thread:C1:{parent['ts']}"


def test_channels_become_thread_and_day_documents_visible_to_their_members(
    slack: tuple[SlackWorld, StubServer],
) -> None:
    source, server = slack
    connector = connector_for(server)
    outcome = connector_sync(connector=connector)
    assert outcome.errors == ()
    general = {f"day:C1:{TODAY}", thread_id(source)}
    assert live(connector) == general | {f"day:C2:{TODAY}"}  # not #random: the app is not in it
    assert visible(connector, "alice@example.com") == live(connector)
    assert visible(connector, "bob@example.com") == general
    assert visible(connector, "carol@example.com") == {f"day:C2:{TODAY}"}
    assert visible(connector, "dave@example.com") == set() and visible(connector, None) == set()
    thread = connector.documents.get(external_id=thread_id(source))
    assert (
        "Alice: Handbook release planning" in thread.content
        and "Bob: handbook ships Friday" in thread.content
    )
    assert thread.source_url.startswith("https://acme.slack.example/archives/C1/p")
    group = Principal.objects.get(
        tenant=connector.tenant, kind="group", external_id="slack:T0ACME/channel/C2"
    )
    assert sorted(group.members.values_list("external_id", flat=True)) == [
        "alice@example.com",
        "carol@example.com",
    ]


def test_public_channels_can_be_open_to_the_whole_workspace(slack: tuple[SlackWorld, StubServer]) -> None:
    _, server = slack
    connector = connector_for(server, public_channels="workspace", channels=["general"])
    connector_sync(connector=connector)
    assert len(visible(connector, "dave@example.com")) == 2  # the day and the thread of #general
    assert visible(connector, "stranger@example.com") == set()


def test_a_membership_change_reaches_search_through_the_permission_sync(
    slack: tuple[SlackWorld, StubServer],
) -> None:
    source, server = slack
    connector = connector_for(server)
    connector_sync(connector=connector)
    source.channels["C2"].members = ["U1", "U4"]
    server.requests.clear()
    outcome = connector_permissions_sync(connector=connector)
    assert outcome.claimed and outcome.errors == ()
    assert server.calls("/conversations.history") == [] and server.calls("/conversations.replies") == []
    assert visible(connector, "carol@example.com") == set()
    assert visible(connector, "dave@example.com") == {f"day:C2:{TODAY}"}


def members(name: str) -> set[str]:
    group = Principal.objects.get(kind="group", external_id=name)
    return set(group.members.values_list("external_id", flat=True))


def test_user_groups_are_synced_and_an_admin_acl_naming_one_follows_them(
    slack: tuple[SlackWorld, StubServer],
) -> None:
    source, server = slack
    source.usergroups = {"S1": ("oncall", ["U2", "U4"]), "S2": ("leads", ["U1"])}
    connector = connector_for(server, user_groups=True)
    assert connector_sync(connector=connector).errors == ()
    oncall = "slack:T0ACME/usergroup/S1"
    assert members(oncall) == {"bob@example.com", "dave@example.com"}
    assert members("slack:T0ACME/usergroup/S2") == {"alice@example.com"}
    thread = thread_id(source)
    document_set_acl(
        document=connector.documents.get(external_id=thread),
        is_public=False,
        principals=[Principal.objects.get(kind="group", external_id=oncall)],
    )
    assert thread in visible(connector, "dave@example.com")
    source.usergroups["S1"] = ("oncall", ["U2"])  # dave leaves the on-call group
    del source.usergroups["S2"]  # a deleted group is emptied
    assert connector_permissions_sync(connector=connector).errors == ()
    assert thread not in visible(connector, "dave@example.com")
    assert thread in visible(connector, "bob@example.com")
    assert members("slack:T0ACME/usergroup/S2") == set()


def test_user_groups_that_cannot_be_read_are_emptied_with_an_error(
    slack: tuple[SlackWorld, StubServer],
) -> None:
    source, server = slack
    source.usergroups = {"S1": ("oncall", ["U2", "U4"])}
    connector = connector_for(server, user_groups=True)
    connector_sync(connector=connector)
    source.usergroups_scope = False
    outcome = connector_permissions_sync(connector=connector)
    assert any("usergroups:read" in e for e in outcome.errors), outcome.errors
    assert members("slack:T0ACME/usergroup/S1") == set()
    assert visible(connector, "bob@example.com") == {f"day:C1:{TODAY}", thread_id(source)}  # as before


def test_user_groups_are_not_read_unless_asked_for(slack: tuple[SlackWorld, StubServer]) -> None:
    source, server = slack
    source.usergroups = {"S1": ("oncall", ["U2"])}
    connector_sync(connector=connector_for(server))
    assert server.calls("/usergroups.list") == []
    assert not Principal.objects.filter(external_id__contains="/usergroup/").exists()


def test_a_thread_is_read_again_only_when_it_has_a_new_reply(slack: tuple[SlackWorld, StubServer]) -> None:
    source, server = slack
    connector = connector_for(server)
    connector_sync(connector=connector)
    server.requests.clear()
    connector_sync(connector=connector)
    assert server.calls("/conversations.replies") == []
    parent = thread_id(source).split(":")[2]
    source.reply("C1", parent, "U1", "handbook moved to Monday", NOW - 10)
    connector_sync(connector=connector)
    first_pages = [r for r in server.calls("/conversations.replies") if "cursor" not in r.query]
    assert len(first_pages) == 1  # one thread read again (its replies take two pages)
    assert "moved to Monday" in connector.documents.get(external_id=thread_id(source)).content


def test_documents_older_than_the_window_are_kept(slack: tuple[SlackWorld, StubServer]) -> None:
    source, server = slack
    source.post("C1", "U1", "an old handbook note", NOW - 20 * 86400)
    connector = connector_for(server, days=30)
    connector_sync(connector=connector)
    old_day = datetime.fromtimestamp(NOW - 20 * 86400, UTC).date().isoformat()
    assert f"day:C1:{old_day}" in live(connector)
    connector.config = {**connector.config, "days": 2}
    connector.save()
    outcome = connector_sync(connector=connector)
    assert outcome.deleted == 0 and f"day:C1:{old_day}" in live(connector)
    source.channels["C1"].members = ["U1"]
    connector_sync(connector=connector)  # the kept document follows the channel's current members
    assert f"day:C1:{old_day}" not in visible(connector, "bob@example.com")


def test_a_channel_the_app_left_goes_private_then_is_pruned(slack: tuple[SlackWorld, StubServer]) -> None:
    source, server = slack
    connector = connector_for(server)
    connector_sync(connector=connector)
    source.channels["C2"].is_member = False
    connector_permissions_sync(connector=connector)
    assert visible(connector, "carol@example.com") == set()
    assert f"day:C2:{TODAY}" in live(connector)
    connector_sync(connector=connector)
    assert f"day:C2:{TODAY}" not in live(connector)


def test_members_that_cannot_be_read_make_the_channel_private(slack: tuple[SlackWorld, StubServer]) -> None:
    _, server = slack
    connector = connector_for(server)
    connector_sync(connector=connector)
    server.fail("/conversations.members", 200, times=50, body={"ok": False, "error": "internal_error"})
    outcome = connector_sync(connector=connector)
    assert "members could not be read" in "\n".join(outcome.errors)
    for user in ("alice@example.com", "bob@example.com", "carol@example.com"):
        assert visible(connector, user) == set(), user


def test_an_unreadable_workspace_makes_everything_private(slack: tuple[SlackWorld, StubServer]) -> None:
    source, server = slack
    connector = connector_for(server)
    connector_sync(connector=connector)
    source.token = "xoxb-revoked"
    outcome = connector_sync(connector=connector)
    assert "invalid_auth" in "\n".join(outcome.errors) and "check the bot token" in "\n".join(outcome.errors)
    assert visible(connector, "alice@example.com") == set()
    assert len(live(connector)) == 3  # nothing pruned


def test_429_with_retry_after_is_waited_for(slack: tuple[SlackWorld, StubServer]) -> None:
    _, server = slack
    connector = connector_for(server)
    server.fail("/conversations.history", 429, times=1, headers={"Retry-After": "1"})
    started = time.monotonic()
    outcome = connector_sync(connector=connector)
    assert outcome.errors == () and time.monotonic() - started >= 1.0
    assert len(live(connector)) == 3


def test_a_history_failure_keeps_the_channel_and_prunes_nothing(slack: tuple[SlackWorld, StubServer]) -> None:
    _, server = slack
    connector = connector_for(server)
    connector_sync(connector=connector)
    server.fail("/conversations.history", 200, times=1, raw=b"{not json")
    outcome = connector_sync(connector=connector)
    assert "not JSON" in "\n".join(outcome.errors)
    assert len(live(connector)) == 3 and outcome.deleted == 0


def test_members_without_an_email_are_reported_but_bots_are_not(slack: tuple[SlackWorld, StubServer]) -> None:
    source, server = slack
    source.channels["C1"].members.append("UEXT")  # a Slack Connect guest from another workspace
    connector = connector_for(server)
    outcome = connector_sync(connector=connector)
    assert any("UEXT" in e and "UB" not in e for e in outcome.errors)


def test_config_is_validated() -> None:
    from knowledge.connectors.saas.slack import SlackKind

    kind = SlackKind()
    assert kind.validate_config({}) == {}
    assert "public_channels" in kind.validate_config({"public_channels": "everyone"})["config"]
    assert "days" in kind.validate_config({"days": 0})["config"]
    assert "unknown keys" in kind.validate_config({"token": "xoxb"})["config"]
    assert "user_groups" in kind.validate_config({"user_groups": "yes"})["config"]
