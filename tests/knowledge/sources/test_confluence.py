"""The Confluence kind against a local server speaking Confluence Cloud's REST API: space
permissions, page restrictions intersected down the page tree, groups, attachments, incremental and
permission syncs, and every way permissions can be unknowable."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from knowledge.models import Connector, Principal
from knowledge.services.connector_sync import connector_sync
from knowledge.services.permission_sync import connector_permissions_sync
from knowledge.source_stubs.confluence import CREDENTIAL, ConfluenceWorld, Page
from knowledge.source_stubs.server import StubServer, serving
from tests.knowledge.sources.helpers import live, source_connector, visible

pytestmark = pytest.mark.django_db
ALICE, BOB, CAROL, DAVE = "alice@example.com", "bob@example.com", "carol@example.com", "dave@example.com"
GUIDE = (
    b"<html><body><h1>Guide</h1><p>The handbook guide for new engineers, with enough words.</p></body></html>"
)


def world() -> ConfluenceWorld:
    return ConfluenceWorld(
        spaces={"S1": "ENG", "S2": "HR"},
        readers={"S1": [("group", "geng"), ("user", "a3")], "S2": [("user", "a1"), ("group", "ghr")]},
        groups={"geng": ("engineering", ["a1", "a2"]), "ghr": ("people-team", ["a4"])},
        accounts={"a1": ALICE, "a2": BOB, "a3": None, "a4": DAVE},
        pages={
            "10": Page(
                "Engineering handbook",
                "<h1>Engineering handbook</h1><p>How the handbook works.</p>",
                "S1",
                attachments={
                    "att1": ("guide.html", "text/html", GUIDE),
                    "att2": ("diagram.png", "image/png", b"\x89PNG"),
                },
            ),
            "11": Page(
                "Salary handbook draft",
                "<p>Draft handbook bands.</p>",
                "S1",
                parent="10",
                restricted_users=["a1", "a4"],
            ),
            "12": Page("Salary handbook appendix", "<p>Appendix of the handbook.</p>", "S1", parent="11"),
            "13": Page(
                "Handbook in a folder",
                "<p>Foldered handbook page.</p>",
                "S1",
                parent="f1",
                parent_type="folder",
            ),
            "20": Page("HR handbook", "<p>The people handbook.</p>", "S2"),
        },
    )


@pytest.fixture
def confluence() -> Iterator[tuple[ConfluenceWorld, StubServer]]:
    source = world()
    with serving(source.stub()) as server:
        yield source, server


def connector_for(server: StubServer, **config: object) -> Connector:
    settings = {"site_url": server.url, "emails": {"a3": CAROL}, **config}
    return source_connector("confluence", settings, CREDENTIAL)


ENG = {"page:10", "attachment:att1"}


def test_space_readers_and_page_restrictions_become_acls(
    confluence: tuple[ConfluenceWorld, StubServer],
) -> None:
    _, server = confluence
    connector = connector_for(server)
    outcome = connector_sync(connector=connector)
    assert live(connector) == ENG | {"page:11", "page:12", "page:13", "page:20"}
    assert "folder" in "\n".join(outcome.errors)  # page 13: an ancestor that is not a page
    assert visible(connector, ALICE) == ENG | {"page:11", "page:12", "page:20"}
    assert visible(connector, BOB) == ENG  # not the restricted page, nor its child
    assert visible(connector, CAROL) == ENG  # a direct space reader (e-mail mapped in config)
    assert visible(connector, DAVE) == {"page:20"}  # restricted to him, but he cannot read the space
    assert visible(connector, None) == set()
    group = Principal.objects.get(
        tenant=connector.tenant, kind="group", external_id=f"confluence:127.0.0.1:{server.port}/group/geng"
    )
    assert sorted(group.members.values_list("external_id", flat=True)) == [ALICE, BOB]
    attachment = connector.documents.get(external_id="attachment:att1")
    assert "handbook guide for new engineers" in attachment.content


def test_blog_posts_follow_the_space_and_their_own_restrictions(
    confluence: tuple[ConfluenceWorld, StubServer],
) -> None:
    source, server = confluence
    source.pages["30"] = Page(
        "Handbook news", "<p>The handbook blog: a new chapter.</p>", "S1", blogpost=True
    )
    source.pages["31"] = Page(
        "Handbook salaries post", "<p>Handbook bands post.</p>", "S1", blogpost=True, restricted_users=["a1"]
    )
    connector = connector_for(server)
    connector_sync(connector=connector)
    posts = {"blogpost:30", "blogpost:31"}
    assert posts <= live(connector)
    assert visible(connector, BOB) & posts == {"blogpost:30"}
    assert visible(connector, ALICE) & posts == posts
    assert visible(connector, DAVE) & posts == set()  # not a reader of the space
    source.pages["31"].restricted_users = ["a2"]
    assert not [e for e in connector_permissions_sync(connector=connector).errors if "blogpost" in e]
    assert visible(connector, ALICE) & posts == {"blogpost:30"} and "blogpost:31" in visible(connector, BOB)
    del source.pages["30"]
    connector_sync(connector=connector)
    assert "blogpost:30" not in live(connector)
    server.requests.clear()
    quiet = connector_for(server, blogposts=False)
    connector_sync(connector=quiet)
    assert not [r for r in server.requests if "blogpost" in r.path] and not posts & live(quiet)


def test_a_second_sync_fetches_only_changed_pages(confluence: tuple[ConfluenceWorld, StubServer]) -> None:
    source, server = confluence
    connector = connector_for(server)
    connector_sync(connector=connector)
    server.requests.clear()
    connector_sync(connector=connector)
    assert [
        r for r in server.requests if r.path.startswith("/wiki/api/v2/pages/") and r.path.count("/") == 5
    ] == []
    assert server.calls("/wiki/download") == []
    source.pages["10"].body, source.pages["10"].version = "<p>The handbook, revised.</p>", 2
    connector_sync(connector=connector)
    assert "revised" in connector.documents.get(external_id="page:10").content


def test_permission_sync_follows_group_and_space_changes(
    confluence: tuple[ConfluenceWorld, StubServer],
) -> None:
    source, server = confluence
    connector = connector_for(server)
    connector_sync(connector=connector)
    source.groups["geng"] = ("engineering", ["a1"])
    source.readers["S1"].append(("user", "a4"))
    server.requests.clear()
    outcome = connector_permissions_sync(connector=connector)
    assert outcome.claimed
    assert server.calls("/wiki/download") == []
    assert visible(connector, BOB) == set()
    assert visible(connector, DAVE) == ENG | {"page:11", "page:12", "page:20"}


def test_unreadable_group_members_make_the_pages_that_need_them_private(
    confluence: tuple[ConfluenceWorld, StubServer],
) -> None:
    _, server = confluence
    connector = connector_for(server)
    connector_sync(connector=connector)
    server.fail("/wiki/rest/api/group/geng", 500, times=50)
    outcome = connector_sync(connector=connector)
    assert "group geng: its members could not be read" in "\n".join(outcome.errors)
    assert visible(connector, ALICE) == {"page:20"}
    assert visible(connector, CAROL) == set()  # a direct reader, but the page's ACL is not known in full


def test_a_restriction_list_longer_than_returned_makes_the_page_private(
    confluence: tuple[ConfluenceWorld, StubServer],
) -> None:
    _, server = confluence
    connector = connector_for(server)
    body = {
        "operation": "read",
        "restrictions": {
            "user": {"results": [], "start": 0, "limit": 0, "size": 3},
            "group": {"results": [], "size": 0},
        },
    }
    server.fail("/wiki/rest/api/content/11/", 200, times=50, body=body)
    connector_sync(connector=connector)
    assert "page:11" not in visible(connector, ALICE) and "page:12" not in visible(connector, ALICE)
    assert "page:10" in visible(connector, ALICE)


def test_an_unknown_principal_type_makes_the_space_private(
    confluence: tuple[ConfluenceWorld, StubServer],
) -> None:
    source, server = confluence
    source.readers["S2"].append(("role", "r-123"))
    connector = connector_for(server)
    outcome = connector_sync(connector=connector)
    assert "unknown principal type 'role'" in "\n".join(outcome.errors)
    assert "page:20" not in visible(connector, ALICE) and "page:20" not in visible(connector, DAVE)


def test_bad_credentials_make_everything_private_and_prune_nothing(
    confluence: tuple[ConfluenceWorld, StubServer],
) -> None:
    source, server = confluence
    connector = connector_for(server)
    connector_sync(connector=connector)
    del source.pages["20"]
    source.credential = "reader@acme.example:rotated"
    outcome = connector_sync(connector=connector)
    assert "check the e-mail and API token" in "\n".join(outcome.errors)
    assert "page:20" in live(connector) and visible(connector, ALICE) == set()


def test_deleted_pages_are_pruned(confluence: tuple[ConfluenceWorld, StubServer]) -> None:
    source, server = confluence
    connector = connector_for(server)
    connector_sync(connector=connector)
    del source.pages["20"]
    source.pages["10"].attachments.pop("att1")
    outcome = connector_sync(connector=connector)
    assert outcome.deleted == 2 and {"page:20", "attachment:att1"}.isdisjoint(live(connector))


def test_a_space_filter_and_unmapped_accounts(confluence: tuple[ConfluenceWorld, StubServer]) -> None:
    _, server = confluence
    connector = connector_for(server, spaces=["ENG"], emails={}, attachments=False)
    outcome = connector_sync(connector=connector)
    assert live(connector) == {"page:10", "page:11", "page:12", "page:13"}
    assert "no e-mail known for Confluence accounts a3" in "\n".join(outcome.errors)
    assert visible(connector, CAROL) == set()


def test_config_is_validated() -> None:
    from knowledge.connectors.saas.confluence import ConfluenceKind

    kind = ConfluenceKind()
    assert "site_url" in kind.validate_config({})["config"]
    assert (
        "spaces" in kind.validate_config({"site_url": "https://a.atlassian.net", "spaces": "ENG"})["config"]
    )
    assert kind.validate_config({"site_url": "https://a.atlassian.net", "spaces": ["ENG"]}) == {}
