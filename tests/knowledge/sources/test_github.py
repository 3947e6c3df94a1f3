"""The GitHub kind against a local server speaking GitHub's REST API: content, access, groups,
incremental syncs, permission syncs, rate limits, outages and malformed answers."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from knowledge.models import Connector, Principal
from knowledge.services.connector_sync import connector_sync
from knowledge.services.permission_sync import connector_permissions_sync
from knowledge.source_stubs.git_http import GitRepository
from knowledge.source_stubs.github import TOKEN, GithubWorld, Issue
from knowledge.source_stubs.server import StubServer, serving
from tests.knowledge.sources.helpers import live, source_connector, visible

pytestmark = pytest.mark.django_db
EVERYONE = ("alice@example.com", "bob@example.com", "carol@example.com", "dave@example.com")


def world() -> GithubWorld:
    return GithubWorld(
        files={
            "README.md": "# Handbook\nThe handbook of Acme.",
            "docs/leave.md": "# Leave policy\nThe handbook says leave is 30 days.",
            "docs/notes.txt": "not markdown: the handbook ignores it",
        },
        issues={
            1: Issue("Handbook typo", "The handbook has a typo", comments=[("bob", "fixed in the handbook")]),
            2: Issue("Add handbook section", "A pull request for the handbook", pull=True),
            3: Issue("Old handbook question", "Is the handbook current?"),
        },
        collaborators=["alice"],
        teams={"eng": ["bob", "carol"]},
        emails={
            "alice": "Alice@Example.com",
            "bob": "bob@example.com",
            "carol": "carol@example.com",
            "dave": "dave@example.com",
        },
    )


@pytest.fixture
def github() -> Iterator[tuple[GithubWorld, StubServer]]:
    source = world()
    with serving(source.stub()) as server:
        yield source, server


def connector_for(server: StubServer, **config: object) -> Connector:
    settings = {"repository": "acme/handbook", "api_url": server.url, "web_url": server.url, **config}
    return source_connector("github", settings, TOKEN)


ALL = {"file:README.md", "file:docs/leave.md", "issue:1", "pull:2", "issue:3"}


def test_a_private_repository_is_visible_to_its_collaborators_and_teams(
    github: tuple[GithubWorld, StubServer],
) -> None:
    _, server = github
    connector = connector_for(server)
    outcome = connector_sync(connector=connector)
    assert outcome.errors == ()
    assert live(connector) == ALL
    for user in ("alice@example.com", "bob@example.com", "carol@example.com"):
        assert visible(connector, user) == ALL, user
    assert visible(connector, "dave@example.com") == set()
    assert visible(connector, None) == set()
    team = Principal.objects.get(tenant=connector.tenant, kind="group", external_id="github:acme/team/eng")
    assert sorted(team.members.values_list("external_id", flat=True)) == [
        "bob@example.com",
        "carol@example.com",
    ]
    issue = connector.documents.get(external_id="issue:1")
    assert "fixed in the handbook" in issue.content and issue.source_url.endswith("/issues/1")
    assert connector.documents.get(external_id="file:docs/leave.md").title == "Leave policy"


def test_a_public_repository_is_visible_to_everyone(github: tuple[GithubWorld, StubServer]) -> None:
    source, server = github
    source.visibility = "public"
    connector = connector_for(server, pull_requests=False)
    connector_sync(connector=connector)
    assert visible(connector, None) == ALL - {"pull:2"}


def test_an_internal_repository_is_visible_to_the_organisations_members(
    github: tuple[GithubWorld, StubServer],
) -> None:
    source, server = github
    source.visibility, source.org_members = "internal", ["carol", "dave"]
    connector = connector_for(server, issues=False, pull_requests=False)
    connector_sync(connector=connector)
    assert visible(connector, "dave@example.com") == {"file:README.md", "file:docs/leave.md"}
    assert visible(connector, "alice@example.com") == set()


def test_a_second_sync_fetches_only_what_changed(github: tuple[GithubWorld, StubServer]) -> None:
    source, server = github
    connector = connector_for(server)
    connector_sync(connector=connector)
    server.requests.clear()
    connector_sync(connector=connector)
    assert server.calls("/repos/acme/handbook/git/blobs") == []
    assert server.calls("/repos/acme/handbook/issues/1/comments") == []
    assert live(connector) == ALL
    source.files["docs/leave.md"] = "# Leave policy\nThe handbook now says leave is 32 days."
    source.issues[1].comments.append(("carol", "another handbook comment"))
    source.issues[1].updated_at = "2026-11-05T10:00:00Z"
    server.requests.clear()
    connector_sync(connector=connector)
    assert len(server.calls("/repos/acme/handbook/git/blobs")) == 1
    assert len(server.calls("/repos/acme/handbook/issues/1/comments")) == 1
    assert "32 days" in connector.documents.get(external_id="file:docs/leave.md").content
    assert "another handbook comment" in connector.documents.get(external_id="issue:1").content


def test_an_unchanged_repository_costs_a_304_and_the_issues_updated_since(
    github: tuple[GithubWorld, StubServer],
) -> None:
    source, server = github
    connector = connector_for(server)
    connector_sync(connector=connector)
    server.requests.clear()
    outcome = connector_sync(connector=connector)
    assert outcome.errors == () and outcome.deleted == 0 and live(connector) == ALL
    (tree,) = server.calls("/repos/acme/handbook/git/trees")
    assert tree.headers.get("if-none-match")  # answered 304: no blob is asked for
    assert server.calls("/repos/acme/handbook/git/blobs") == []
    listed = [r for r in server.calls("/repos/acme/handbook/issues") if r.path.endswith("/issues")]
    assert any(r.query.get("since") == "2026-11-01T10:00:00Z" for r in listed)
    source.issues[2].updated_at = "2026-11-07T10:00:00Z"
    source.issues[2].body = "A pull request for the handbook, revised"
    source.files["docs/new.md"] = "# New\nA new handbook page."
    connector_sync(connector=connector)
    assert "revised" in connector.documents.get(external_id="pull:2").content
    assert live(connector) == ALL | {"file:docs/new.md"}
    server.requests.clear()
    connector_sync(connector=connector)
    since = {r.query.get("since") for r in server.calls("/repos/acme/handbook/issues") if "since" in r.query}
    assert since == {"2026-11-07T10:00:00Z"}


def test_an_issue_deleted_while_another_is_opened_is_pruned_by_the_count_check(
    github: tuple[GithubWorld, StubServer],
) -> None:
    source, server = github
    connector = connector_for(server)
    connector_sync(connector=connector)
    del source.issues[3]  # deleted (or transferred): `since` alone would never say so
    source.issues[4] = Issue("New handbook issue", "Fresh", updated_at="2026-11-09T10:00:00Z")
    outcome = connector_sync(connector=connector)
    assert outcome.deleted == 1
    assert live(connector) == ALL - {"issue:3"} | {"issue:4"}


def test_changed_settings_a_full_resync_or_a_failed_file_list_everything_again(
    github: tuple[GithubWorld, StubServer],
) -> None:
    source, server = github
    connector = connector_for(server)
    connector_sync(connector=connector)

    def conditional() -> tuple[bool, bool]:
        tree = server.calls("/repos/acme/handbook/git/trees")[-1]
        issues = [r for r in server.calls("/repos/acme/handbook/issues") if r.path.endswith("/issues")]
        return bool(tree.headers.get("if-none-match")), any("since" in r.query for r in issues)

    connector_sync(connector=connector, full=True)
    assert conditional() == (False, False)
    connector.config = {**connector.config, "extensions": [".md", ".txt"]}
    connector.save()
    connector_sync(connector=connector)
    assert conditional() == (False, False) and "file:docs/notes.txt" in live(connector)
    source.files["docs/leave.md"] = "# Leave\nChanged handbook text."
    server.fail("/repos/acme/handbook/git/blobs", 404, times=1)
    connector_sync(connector=connector)  # the changed file could not be read: kept, and asked for again
    connector_sync(connector=connector)
    assert conditional()[0] is False
    assert "Changed handbook text" in connector.documents.get(external_id="file:docs/leave.md").content


WIKI = {"Home.md": "# Home\nThe handbook wiki's home.", "Onboarding-Guide.md": "Onboarding: the handbook."}


def test_wiki_pages_are_cloned_with_git_and_follow_the_repository_acl(
    github: tuple[GithubWorld, StubServer],
) -> None:
    source, server = github
    source.wiki = GitRepository("acme/handbook.wiki.git")
    source.wiki.publish({**WIKI, "notes.txt": "the handbook, not Markdown"}, {"Leak.md": "/etc/passwd"})
    connector = connector_for(server)
    assert connector_sync(connector=connector).errors == ()
    pages = {"wiki:Home.md", "wiki:Onboarding-Guide.md"}  # no symlink is followed, no other extension read
    assert live(connector) == ALL | pages
    assert connector.documents.get(external_id="wiki:Onboarding-Guide.md").title == "Onboarding Guide"
    assert visible(connector, "alice@example.com") == ALL | pages
    assert visible(connector, "dave@example.com") == set()
    clones = server.calls("/acme/handbook.wiki.git")
    assert clones and all(r.headers["authorization"].startswith("Basic ") for r in clones)
    source.wiki.publish({"Home.md": "# Home\nThe handbook wiki, rewritten."})
    connector_sync(connector=connector)
    assert live(connector) == ALL | {"wiki:Home.md"}
    assert "rewritten" in connector.documents.get(external_id="wiki:Home.md").content


def test_an_unreadable_wiki_keeps_its_pages_and_a_missing_one_prunes_them(
    github: tuple[GithubWorld, StubServer],
) -> None:
    source, server = github
    source.wiki = GitRepository("acme/handbook.wiki.git")
    source.wiki.publish(WIKI)
    connector = connector_for(server)
    connector_sync(connector=connector)
    server.fail("/acme/handbook.wiki.git", 500, times=50)
    outcome = connector_sync(connector=connector)
    assert any("the wiki could not be read" in e for e in outcome.errors), outcome.errors
    assert {"wiki:Home.md", "wiki:Onboarding-Guide.md"} <= live(connector)
    server.faults.clear()
    other = GitRepository("acme/handbook.wiki.git")
    other.publish({"Planted.md": "A page from another server."})
    with serving(StubServer(answer=other.answer)) as elsewhere:
        refs = f"{elsewhere.url}/acme/handbook.wiki.git/info/refs?service=git-upload-pack"
        server.fail("/acme/handbook.wiki.git/info/refs", 302, headers={"Location": refs})
        outcome = connector_sync(connector=connector)  # the redirect is not followed
        assert elsewhere.requests == []
    assert any("the wiki could not be read" in e for e in outcome.errors), outcome.errors
    assert "wiki:Planted.md" not in live(connector) and "wiki:Home.md" in live(connector)
    server.faults.clear()
    source.wiki = None  # the wiki was turned off: GitHub answers 404
    assert connector_sync(connector=connector).errors == ()
    assert live(connector) == ALL
    source.wiki = GitRepository("acme/handbook.wiki.git")
    source.wiki.publish(WIKI)
    server.requests.clear()
    quiet = connector_for(server, wiki=False)
    assert connector_sync(connector=quiet).errors == ()
    assert server.calls("/acme/handbook.wiki.git") == [] and live(quiet) == ALL


def test_removed_files_and_issues_are_pruned(github: tuple[GithubWorld, StubServer]) -> None:
    source, server = github
    connector = connector_for(server)
    connector_sync(connector=connector)
    del source.files["README.md"]
    del source.issues[3]
    outcome = connector_sync(connector=connector)
    assert outcome.deleted == 2
    assert live(connector) == ALL - {"file:README.md", "issue:3"}


def test_a_membership_change_reaches_search_through_the_permission_sync(
    github: tuple[GithubWorld, StubServer],
) -> None:
    source, server = github
    connector = connector_for(server)
    connector_sync(connector=connector)
    source.teams["eng"] = ["carol", "dave"]
    server.requests.clear()
    outcome = connector_permissions_sync(connector=connector)
    assert outcome.claimed and outcome.errors == ()
    assert (
        server.calls("/repos/acme/handbook/git") == [] and server.calls("/repos/acme/handbook/issues") == []
    )
    assert visible(connector, "bob@example.com") == set()
    assert visible(connector, "dave@example.com") == ALL
    connector.refresh_from_db()
    assert connector.permissions_synced_at is not None
    assert list(connector.runs.order_by("-pk").values_list("kind", flat=True)[:1]) == ["acl"]


def test_the_permission_sync_follows_a_visibility_change(github: tuple[GithubWorld, StubServer]) -> None:
    source, server = github
    connector = connector_for(server)
    connector_sync(connector=connector)
    source.visibility = "public"
    assert connector_permissions_sync(connector=connector).changed == len(ALL)
    assert visible(connector, None) == ALL
    source.visibility = "private"
    source.collaborators = []
    connector_permissions_sync(connector=connector)
    assert visible(connector, None) == set() and visible(connector, "alice@example.com") == set()
    assert visible(connector, "bob@example.com") == ALL


def test_a_team_whose_members_cannot_be_read_makes_the_documents_private(
    github: tuple[GithubWorld, StubServer],
) -> None:
    _, server = github
    connector = connector_for(server)
    connector_sync(connector=connector)
    server.fail("/orgs/acme/teams/eng/members", 500, times=50)
    outcome = connector_sync(connector=connector)
    assert "team eng: its members could not be read" in "\n".join(outcome.errors)
    for user in EVERYONE:  # alice is a direct collaborator, but the ACL is not known in full
        assert visible(connector, user) == set(), user
    assert live(connector) == ALL  # and nothing was pruned
    server.faults.clear()
    connector_sync(connector=connector)
    assert visible(connector, "bob@example.com") == ALL


def test_a_member_list_cut_by_the_paging_limit_is_not_taken_as_complete(
    github: tuple[GithubWorld, StubServer],
) -> None:
    source, server = github
    source.teams["eng"] = ["bob", "carol", "dave"]  # two pages of two
    connector = connector_for(server, max_pages=1, issues=False, pull_requests=False)
    outcome = connector_sync(connector=connector)
    assert "more than 1 pages" in "\n".join(outcome.errors)
    assert all(visible(connector, user) == set() for user in EVERYONE)


def test_unreadable_collaborators_make_everything_private_and_prune_nothing(
    github: tuple[GithubWorld, StubServer],
) -> None:
    source, server = github
    connector = connector_for(server)
    connector_sync(connector=connector)
    del source.issues[3]
    server.fail("/repos/acme/handbook/collaborators", 403, times=50)
    outcome = connector_sync(connector=connector)
    assert "access could not be read" in "\n".join(outcome.errors)
    assert outcome.deleted == 0 and "issue:3" in live(connector)
    assert all(visible(connector, user) == set() for user in EVERYONE)


def test_a_bad_token_fails_the_sync_and_makes_the_documents_private(
    github: tuple[GithubWorld, StubServer],
) -> None:
    source, server = github
    connector = connector_for(server)
    connector_sync(connector=connector)
    source.token = "ghp_rotated"
    outcome = connector_sync(connector=connector)
    assert "check the token" in "\n".join(outcome.errors)
    assert live(connector) == ALL and visible(connector, "alice@example.com") == set()
    connector.refresh_from_db()
    assert connector.last_sync_status == "failed"


def test_429_with_retry_after_is_waited_for(github: tuple[GithubWorld, StubServer]) -> None:
    _, server = github
    connector = connector_for(server)
    server.fail("/repos/acme/handbook/issues", 429, times=1, headers={"Retry-After": "1"})
    server.fail(
        "/repos/acme/handbook/git/trees",
        403,
        times=1,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 1)},
    )
    started = time.monotonic()
    outcome = connector_sync(connector=connector)
    assert outcome.errors == ()
    assert time.monotonic() - started >= 1.0
    assert live(connector) == ALL


def test_a_rate_limit_longer_than_the_wait_limit_leaves_the_run_incomplete(
    github: tuple[GithubWorld, StubServer],
) -> None:
    source, server = github
    connector = connector_for(server)
    connector_sync(connector=connector)
    del source.issues[3]
    server.fail("/repos/acme/handbook/issues", 429, times=1, headers={"Retry-After": "3600"})
    outcome = connector_sync(connector=connector)
    assert "rate limited for 3600 s" in "\n".join(outcome.errors)
    assert "issue:3" in live(connector)  # incomplete: nothing pruned
    assert visible(connector, "alice@example.com") == ALL  # kept documents keep their (known) ACL


def test_a_malformed_body_is_an_error_not_a_crash(github: tuple[GithubWorld, StubServer]) -> None:
    _, server = github
    connector = connector_for(server)
    server.fail("/repos/acme/handbook/issues", 200, times=1, raw=b"<html>not json</html>")
    outcome = connector_sync(connector=connector)
    assert "not JSON" in "\n".join(outcome.errors)
    assert {"file:README.md", "file:docs/leave.md"} <= live(connector)


def test_a_paging_link_to_another_host_is_refused(github: tuple[GithubWorld, StubServer]) -> None:
    _, server = github
    connector = connector_for(server, pull_requests=False)
    server.fail(
        "/repos/acme/handbook/issues",
        200,
        times=1,
        body=[],
        headers={"Link": '<https://evil.example/steal?page=2>; rel="next"'},
    )
    outcome = connector_sync(connector=connector)
    assert "refusing a link off the API's origin" in "\n".join(outcome.errors)


def test_users_without_an_email_are_left_out_and_reported(github: tuple[GithubWorld, StubServer]) -> None:
    source, server = github
    source.emails["carol"] = None
    connector = connector_for(server, emails={"Dave": "dave@example.com"})
    source.collaborators = ["alice", "dave"]
    outcome = connector_sync(connector=connector)
    assert "no e-mail known for GitHub users carol" in "\n".join(outcome.errors)
    assert visible(connector, "carol@example.com") == set()
    assert visible(connector, "dave@example.com") == ALL


def test_the_credential_is_stored_encrypted(github: tuple[GithubWorld, StubServer]) -> None:
    _, server = github
    connector = connector_for(server)
    stored = Connector.objects.values_list("credential_sealed", flat=True).get(pk=connector.pk)
    assert TOKEN not in stored and stored.startswith("gAAAA")
    assert Connector.objects.get(pk=connector.pk).credential() == TOKEN
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in server.requests)


def test_config_is_validated() -> None:
    from knowledge.connectors.saas.github import GithubKind

    kind = GithubKind()
    assert "repository" in kind.validate_config({})["config"]
    assert "api_url" in kind.validate_config({"repository": "a/b", "api_url": "ftp://x"})["config"]
    assert "unknown keys" in kind.validate_config({"repository": "a/b", "token": "x"})["config"]
    assert kind.validate_config({"repository": "a/b", "extensions": [".md"], "emails": {"x": "x@y.z"}}) == {}
