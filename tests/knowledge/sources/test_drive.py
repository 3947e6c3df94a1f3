"""The Google Drive kind against a local server speaking Google's token endpoint, Drive v3 and the
Admin Directory: folders in scope, permissions as ACLs, Google groups and domains, the changes feed,
permission syncs, rate limits, outages, forged keys and malformed answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from knowledge.models import Connector, Principal
from knowledge.services.connector_sync import connector_sync
from knowledge.services.documents import document_restore, document_soft_delete
from knowledge.services.permission_sync import connector_permissions_sync
from knowledge.source_stubs.drive import (
    DOC,
    FOLDER,
    SUBJECT,
    DriveFile,
    DriveWorld,
    anyone,
    domain,
    group,
    service_account_key,
    user,
)
from knowledge.source_stubs.server import StubServer, serving
from tests.knowledge.connectors.samples import pdf
from tests.knowledge.sources.helpers import live, source_connector, visible

pytestmark = pytest.mark.django_db
ALICE, BOB, CAROL, DAVE, ERIN = (f"{n}@acme.com" for n in ("alice", "bob", "carol", "dave", "erin"))
IN_SCOPE = {"file:doc1", "file:pdf1", "file:sheet1", "file:txt1"}


def world(tmp: Path) -> DriveWorld:
    return DriveWorld(
        files={
            "F": DriveFile("Handbook", FOLDER, parents=["root"]),
            "F2": DriveFile("Policies", FOLDER, parents=["F"]),
            "X": DriveFile("Elsewhere", FOLDER, parents=["root"]),
            "doc1": DriveFile(
                "Leave policy",
                DOC,
                b"<h1>Leave</h1><p>The handbook says leave is 30 days.</p>",
                parents=["F"],
                permissions=[user(ALICE, "owner"), group("Eng@acme.com")],
            ),
            "pdf1": DriveFile(
                "Travel.pdf",
                "application/pdf",
                pdf(tmp / "travel.pdf", ["The handbook on travel: book trains."]).read_bytes(),
                parents=["F2"],
                permissions=[domain("acme.com")],
            ),
            "sheet1": DriveFile(
                "Teams",
                "application/vnd.google-apps.spreadsheet",
                b"team,handbook owner\neng,bob",
                parents=["F"],
                permissions=[user(BOB, "writer"), anyone()],
            ),
            "txt1": DriveFile(
                "notes.txt",
                "text/plain",
                b"Carol's handbook notes.",
                parents=["F"],
                permissions=[user(CAROL)],
                inline_permissions=False,
            ),
            "img1": DriveFile("logo.png", "image/png", b"\x89PNG", parents=["F"], permissions=[anyone()]),
            "out1": DriveFile(
                "Secret handbook", DOC, b"<p>handbook outside</p>", parents=["X"], permissions=[anyone()]
            ),
        },
        groups={"eng@acme.com": [BOB, DAVE]},
        users=[ALICE, BOB, CAROL, DAVE, "mallory@other.org"],
    )


@pytest.fixture
def drive(tmp_path: Path) -> Iterator[tuple[DriveWorld, StubServer]]:
    source = world(tmp_path)
    with serving(source.stub()) as server:
        yield source, server


def connector_for(server: StubServer, **config: object) -> Connector:
    settings = {
        "domain": "acme.com",
        "subject": SUBJECT,
        "folders": ["F"],
        "api_url": server.url,
        **config,
    }
    return source_connector("google_drive", settings, service_account_key(f"{server.url}/token"))


def test_a_file_an_admin_deleted_keeps_following_its_permissions(
    drive: tuple[DriveWorld, StubServer],
) -> None:
    """Restoring it must not bring back an ACL the source narrowed while it was deleted."""
    source, server = drive
    connector = connector_for(server)
    connector_sync(connector=connector)
    assert "file:doc1" in visible(connector, BOB)  # through the Eng group
    document_soft_delete(document=connector.documents.get(external_id="file:doc1"), actor="admin")
    source.files["doc1"].permissions = [user(ALICE, "owner")]  # the group loses it
    assert connector_permissions_sync(connector=connector).errors == ()
    document_restore(document=connector.documents.get(external_id="file:doc1"))
    assert "file:doc1" not in visible(connector, BOB) and "file:doc1" in visible(connector, ALICE)


def downloads(server: StubServer, file_id: str) -> int:
    return len([r for r in server.calls(f"/drive/v3/files/{file_id}") if r.path.count("/") >= 4 or r.query])


def test_files_in_the_chosen_folders_become_documents_under_their_permissions(
    drive: tuple[DriveWorld, StubServer],
) -> None:
    source, server = drive
    connector = connector_for(server)
    outcome = connector_sync(connector=connector)
    assert outcome.errors == ()
    assert live(connector) == IN_SCOPE
    assert visible(connector, ALICE) == {"file:doc1", "file:pdf1"}  # owner; the domain
    assert visible(connector, BOB) == {"file:doc1", "file:pdf1", "file:sheet1"}  # eng; the domain; writer
    assert visible(connector, CAROL) == {"file:pdf1", "file:txt1"}  # permissions.list, not inline
    assert visible(connector, DAVE) == {"file:doc1", "file:pdf1"}
    assert visible(connector, ERIN) == set()  # not in the Directory: not the domain
    assert visible(connector, None) == set()  # anyone-with-link is ignored by default
    assert server.calls("/drive/v3/files/out1") == []  # outside the folders: never read
    assert source.subjects == [SUBJECT]
    assert "leave is 30 days" in connector.documents.get(external_id="file:doc1").content
    assert "book trains" in connector.documents.get(external_id="file:pdf1").content
    eng = Principal.objects.get(tenant=connector.tenant, external_id="gdrive:acme.com/group/eng@acme.com")
    assert sorted(eng.members.values_list("external_id", flat=True)) == [BOB, DAVE]
    assert connector.documents.get(external_id="file:doc1").source_url.endswith("/file/d/doc1/view")


def test_a_second_sync_reads_only_the_changes(drive: tuple[DriveWorld, StubServer]) -> None:
    source, server = drive
    connector = connector_for(server)
    connector_sync(connector=connector)
    assert Connector.objects.get(pk=connector.pk).source_cursor == "0"
    source.touch("doc1", content=b"<p>The handbook says leave is 35 days.</p>")
    source.remove("txt1")
    source.touch("sheet1", permissions=[user(ERIN)])
    server.requests.clear()
    outcome = connector_sync(connector=connector)
    assert outcome.errors == () and outcome.deleted == 1
    assert [r for r in server.requests if r.path == "/drive/v3/files"] == []  # no full listing
    assert downloads(server, "pdf1") == 0
    assert "35 days" in connector.documents.get(external_id="file:doc1").content
    assert live(connector) == IN_SCOPE - {"file:txt1"}
    assert visible(connector, ERIN) == {"file:sheet1"} and "file:sheet1" not in visible(connector, BOB)
    assert Connector.objects.get(pk=connector.pk).source_cursor == "3"


def test_a_file_moved_out_of_the_folders_is_pruned(drive: tuple[DriveWorld, StubServer]) -> None:
    source, server = drive
    connector = connector_for(server)
    connector_sync(connector=connector)
    source.touch("doc1", parents=["X"])
    source.touch("out1", parents=["F2"])  # moved in: read now
    connector_sync(connector=connector)
    assert live(connector) == IN_SCOPE - {"file:doc1"} | {"file:out1"}


def test_a_refused_change_token_lists_everything_again(drive: tuple[DriveWorld, StubServer]) -> None:
    _, server = drive
    connector = connector_for(server)
    connector_sync(connector=connector)
    Connector.objects.filter(pk=connector.pk).update(source_cursor="expired-token")
    outcome = connector_sync(connector=Connector.objects.get(pk=connector.pk))
    assert "the stored change token was refused" in "\n".join(outcome.errors)
    assert live(connector) == IN_SCOPE
    assert Connector.objects.get(pk=connector.pk).source_cursor == "0"


def test_a_full_resync_lists_everything(drive: tuple[DriveWorld, StubServer]) -> None:
    _, server = drive
    connector = connector_for(server)
    connector_sync(connector=connector)
    server.requests.clear()
    connector_sync(connector=Connector.objects.get(pk=connector.pk), full=True)
    assert [r for r in server.requests if r.path == "/drive/v3/files"] != []
    assert [r for r in server.requests if r.path == "/drive/v3/changes"] == []


def test_a_membership_change_reaches_search_through_the_permission_sync(
    drive: tuple[DriveWorld, StubServer],
) -> None:
    source, server = drive
    connector = connector_for(server)
    connector_sync(connector=connector)
    source.groups["eng@acme.com"] = [DAVE, ERIN]
    source.files["pdf1"].permissions = [user(ALICE)]  # a sharing change the changes feed has not shown
    server.requests.clear()
    outcome = connector_permissions_sync(connector=connector)
    assert outcome.claimed and outcome.errors == ()
    assert downloads(server, "doc1") == 0 and downloads(server, "pdf1") == 0
    assert visible(connector, BOB) == {"file:sheet1"}
    assert visible(connector, ERIN) == {"file:doc1"}
    assert visible(connector, DAVE) == {"file:doc1"}


def test_unreadable_group_members_make_the_files_naming_the_group_private(
    drive: tuple[DriveWorld, StubServer],
) -> None:
    _, server = drive
    connector = connector_for(server)
    connector_sync(connector=connector)
    server.fail("/admin/directory/v1/groups/", 403, times=50)
    outcome = connector_permissions_sync(connector=connector)
    assert "group eng@acme.com: members could not be read in full" in "\n".join(outcome.errors)
    assert "file:doc1" not in visible(connector, ALICE) | visible(connector, BOB) | visible(connector, DAVE)
    assert visible(connector, CAROL) == {"file:pdf1", "file:txt1"}  # other files are unaffected


def test_a_member_list_cut_by_the_paging_limit_is_incomplete(drive: tuple[DriveWorld, StubServer]) -> None:
    source, server = drive
    source.users = [f"user{i}@acme.com" for i in range(50)]  # 25 pages of 2; files take 5
    connector = connector_for(server, max_pages=10)
    outcome = connector_sync(connector=connector)
    assert "domain acme.com: members could not be read in full" in "\n".join(outcome.errors)
    assert "file:pdf1" not in visible(connector, "user0@acme.com")


def test_an_unknown_permission_type_or_a_failed_permission_list_makes_the_file_private(
    drive: tuple[DriveWorld, StubServer],
) -> None:
    source, server = drive
    source.files["sheet1"].permissions.append({"type": "robot", "role": "reader"})
    server.fail("/drive/v3/files/txt1/permissions", 403, times=50)
    connector = connector_for(server)
    outcome = connector_sync(connector=connector)
    errors = "\n".join(outcome.errors)
    assert "file:sheet1: a permission of an unknown type 'robot'" in errors
    assert "file:txt1: its permissions could not be read" in errors
    assert "file:sheet1" not in visible(connector, BOB) and visible(connector, CAROL) == {"file:pdf1"}


def test_anyone_with_the_link_can_be_public_by_policy(drive: tuple[DriveWorld, StubServer]) -> None:
    _, server = drive
    connector = connector_for(server, anyone_with_link="public")
    connector_sync(connector=connector)
    assert visible(connector, None) == {"file:sheet1"}


def test_a_forged_key_makes_everything_private_and_prunes_nothing(
    drive: tuple[DriveWorld, StubServer],
) -> None:
    from cryptography.hazmat.primitives.asymmetric import rsa

    source, server = drive
    connector = connector_for(server)
    connector_sync(connector=connector)
    source.remove("txt1")
    forged = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key = service_account_key(f"{server.url}/token", forged)
    connector = Connector.objects.get(pk=connector.pk)
    connector.set_credential(key)
    connector.save()
    outcome = connector_sync(connector=connector)
    assert "could not sign in to Google" in "\n".join(outcome.errors)
    assert "check the service-account key" in "\n".join(outcome.errors)
    assert live(connector) == IN_SCOPE and visible(connector, BOB) == set()
    assert Connector.objects.get(pk=connector.pk).source_cursor == "0"  # the removal is read later


def test_a_failure_part_way_prunes_nothing_and_keeps_the_cursor(
    drive: tuple[DriveWorld, StubServer],
) -> None:
    source, server = drive
    connector = connector_for(server)
    connector_sync(connector=connector)
    source.remove("txt1")
    server.fail("/drive/v3/changes", 403, times=50)
    outcome = connector_sync(connector=connector)
    assert "could not be listed in full" in "\n".join(outcome.errors)
    assert live(connector) == IN_SCOPE and Connector.objects.get(pk=connector.pk).source_cursor == "0"
    server.faults.clear()
    assert connector_sync(connector=connector).deleted == 1  # read again from the stored token


def test_a_malformed_listing_prunes_nothing(drive: tuple[DriveWorld, StubServer]) -> None:
    _, server = drive
    connector = connector_for(server)
    connector_sync(connector=connector)
    server.fail("/drive/v3/files", 200, raw=b"<html>not json", times=50)
    outcome = connector_sync(connector=connector, full=True)
    assert "not JSON" in "\n".join(outcome.errors)
    assert live(connector) == IN_SCOPE


def test_429_with_retry_after_is_waited_for(drive: tuple[DriveWorld, StubServer]) -> None:
    _, server = drive
    server.fail("/drive/v3/files", 429, headers={"Retry-After": "1"})
    connector = connector_for(server)
    outcome = connector_sync(connector=connector)
    assert outcome.errors == () and live(connector) == IN_SCOPE


def test_config_is_validated() -> None:
    from knowledge.connectors.saas.drive import DriveKind

    kind = DriveKind()
    assert "domain" in kind.validate_config({})["config"]
    assert "folders" in kind.validate_config({"domain": "acme.com", "folders": "F"})["config"]
    assert (
        "anyone_with_link" in kind.validate_config({"domain": "acme.com", "anyone_with_link": "x"})["config"]
    )
    assert "subject" in kind.validate_config({"domain": "acme.com", "subject": "admin"})["config"]
    assert kind.validate_config({"domain": "acme.com", "subject": SUBJECT, "folders": ["F"]}) == {}
