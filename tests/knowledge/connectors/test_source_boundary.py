"""The source boundary: links out of the folder, special files and unusable ACL files never widen what
a filesystem sync reads or publishes, and nothing in the folder can block a listing."""

from __future__ import annotations

import json
import os
import signal
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from knowledge.connectors import boundary
from knowledge.connectors.extract.base import ExtractionError
from knowledge.connectors.extract.sandbox import Sandbox
from knowledge.connectors.filesystem import FilesystemKind
from knowledge.models import Connector, Document
from knowledge.search import search_chunks
from knowledge.services.connector_sync import connector_sync
from retrieval_backends.types import SearchScope
from tests.factories import ConnectorFactory

pytestmark = pytest.mark.django_db
SECRET = "zebracrossing outside secret"


@contextmanager
def finishes_within(seconds: int) -> Iterator[None]:
    """Fails the test (instead of hanging the suite) when the block blocks longer than `seconds`."""

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s: something blocked")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text(f"# Secret\n{SECRET}")
    (folder / ".kbacl.json").write_text(json.dumps({"public": True}))
    return folder


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / ".kbacl.json").write_text(json.dumps({"public": True}))
    (folder / "inside.md").write_text("# Inside\nordinary handbook text")
    return folder


def fs_connector(folder: Path, *, public: bool = False) -> Connector:
    return ConnectorFactory.create(kind="filesystem", config={"path": str(folder)}, default_is_public=public)


def live(connector: Connector) -> dict[str, Document]:
    return {d.external_id: d for d in connector.documents.filter(deleted_at__isnull=True)}


def public_hits(connector: Connector, query: str) -> list[str]:
    scope = SearchScope(tenant_id=connector.tenant_id, principal_tokens=frozenset({"public"}))
    hits = search_chunks(scope=scope, query_text=query, limit=10, lanes=("keyword",)).hits
    return [h.content for h in hits]


def test_links_out_of_the_folder_are_skipped_reported_and_never_searchable(root: Path, outside: Path) -> None:
    (root / "passwd.md").symlink_to("/etc/passwd")
    (root / "env.txt").symlink_to("/proc/self/environ")
    (root / "relative.md").symlink_to(Path("..") / "outside" / "secret.md")
    (root / "elsewhere").symlink_to(outside, target_is_directory=True)
    connector = fs_connector(root)
    outcome = connector_sync(connector=connector)
    assert set(live(connector)) == {"inside.md"}
    reason = "skipped: a symbolic link that leaves the connector's folder"
    assert sorted(outcome.errors) == [
        f"elsewhere: {reason}",
        f"env.txt: {reason}",
        f"passwd.md: {reason}",
        f"relative.md: {reason}",
    ]
    assert public_hits(connector, "root bin bash") == []
    assert public_hits(connector, "zebracrossing") == []


def test_a_document_indexed_from_an_escaping_link_earlier_is_removed(root: Path, outside: Path) -> None:
    (root / "leak.md").symlink_to(outside / "secret.md")
    connector = fs_connector(root)
    # What a sync on an older release did: the link's target, published under the link's name.
    from knowledge.connectors.types import SourceAcl, SourceDocument
    from knowledge.services.writes import documents_write

    leaked = SourceDocument("leak.md", SECRET, acl=SourceAcl(public=True))
    documents_write(connector=connector, documents=[leaked])
    assert public_hits(connector, "zebracrossing")
    outcome = connector_sync(connector=connector)
    assert "leak.md: skipped: a symbolic link that leaves the connector's folder" in outcome.errors
    assert outcome.deleted == 1 and set(live(connector)) == {"inside.md"}
    assert public_hits(connector, "zebracrossing") == []


def test_links_inside_the_folder_are_followed_to_files_but_never_into_folders(root: Path) -> None:
    sub = root / "sub"
    sub.mkdir()
    (sub / "real.md").write_text("# Real\nthe one real file")
    (root / "alias.md").symlink_to(sub / "real.md")
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "subalias").symlink_to(sub, target_is_directory=True)
    connector = fs_connector(root)
    outcome = connector_sync(connector=connector)
    assert outcome.errors == ()
    assert set(live(connector)) == {"inside.md", "sub/real.md", "alias.md"}
    assert live(connector)["alias.md"].is_public  # the link's own folder's ACL file applies


def test_fifos_sockets_and_broken_links_never_block_and_are_reported(root: Path) -> None:
    os.mkfifo(root / "x.md")
    os.mkfifo(root / "ignored.bin")  # matches no pattern: not worth a report
    (root / "dangling.md").symlink_to(root / "nothing-here.md")
    (root / "self.md").symlink_to(root / "self.md")
    here = os.getcwd()
    os.chdir(root)  # a socket's path must be short: bind it relative to the folder
    try:
        server = socket.socket(socket.AF_UNIX)
        server.bind("s.md")
    finally:
        os.chdir(here)
    connector = fs_connector(root)
    try:
        with finishes_within(60):
            outcome = connector_sync(connector=connector)
    finally:
        server.close()
    assert set(live(connector)) == {"inside.md"}
    errors = sorted(outcome.errors)
    assert errors[0].startswith("dangling.md: skipped: a broken symbolic link")
    assert errors[1] == "s.md: skipped: a socket (only regular files are read)"
    assert errors[2].startswith("self.md: skipped: a broken symbolic link")
    assert errors[3] == "x.md: skipped: a FIFO (only regular files are read)"
    assert len(errors) == 4


@pytest.mark.parametrize("form", ["dangling link", "folder", "fifo", "link loop", "link out", "deep", "big"])
def test_an_acl_file_in_any_unusable_form_makes_its_documents_private(
    root: Path, outside: Path, form: str
) -> None:
    team = root / "team"
    team.mkdir()
    (team / "plan.md").write_text("# Plan\nthe team plan")
    other = root / "other"
    other.mkdir()
    (other / "fine.md").write_text("# Fine\nunaffected by the team folder")
    sidecar = team / ".kbacl.json"
    if form == "dangling link":
        sidecar.symlink_to(team / "missing.json")
    elif form == "folder":
        sidecar.mkdir()
    elif form == "fifo":
        os.mkfifo(sidecar)
    elif form == "link loop":
        sidecar.symlink_to(sidecar)
    elif form == "link out":
        sidecar.symlink_to(outside / ".kbacl.json")  # a valid, public ACL: but not the admin's folder
    elif form == "deep":
        sidecar.write_text("[" * 100_000 + "]" * 100_000)
    else:
        sidecar.write_text(json.dumps({"public": True, "users": ["a@example.com"] * 400_000}))
    connector = fs_connector(root, public=True)
    with finishes_within(60):
        outcome = connector_sync(connector=connector)
    documents = live(connector)
    plan = documents["team/plan.md"]
    assert (plan.is_public, plan.allowed_principals.count(), plan.acl_origin) == (False, 0, "source")
    assert documents["other/fine.md"].is_public and documents["inside.md"].is_public  # the rest syncs
    assert [e for e in outcome.errors if e.startswith("team/plan.md: team/.kbacl.json: ")], outcome.errors
    assert not any("the team plan" in hit for hit in public_hits(connector, "team plan"))


def test_a_document_kept_under_an_acl_file_that_broke_loses_its_wider_acl(root: Path) -> None:
    (root / "big.md").write_text("# Big\nstarts small and public")
    connector = ConnectorFactory.create(kind="filesystem", config={"path": str(root), "max_file_bytes": 1000})
    connector_sync(connector=connector)
    assert live(connector)["big.md"].is_public
    (root / "big.md").write_text("x " * 1000)  # now too large: kept as it was, not re-read
    (root / ".kbacl.json").write_text("{broken")
    outcome = connector_sync(connector=connector)
    assert "big.md: 2000 bytes is larger than the 1000-byte limit" in outcome.errors
    big = live(connector)["big.md"]
    assert "starts small" in big.content and not big.is_public and big.acl_origin == "source"
    assert public_hits(connector, "starts small public") == []


def test_the_boundary_check_on_the_open_descriptor_catches_a_folder_swapped_after_resolving(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "swapped").symlink_to(outside, target_is_directory=True)
    target = root / "swapped" / "secret.md"
    real = boundary.real_root(root)
    with pytest.raises(boundary.OutsideBoundary):
        boundary.read_inside(target, real, 1000)
    # As if the folder became a link between resolving the path and opening it.
    monkeypatch.setattr(boundary.os.path, "realpath", lambda path: os.fspath(path))
    with pytest.raises(boundary.OutsideBoundary, match="a folder on its path became a link"):
        boundary.read_inside(target, real, 1000)


def test_the_sandbox_child_reads_every_format_itself_without_blocking(root: Path) -> None:
    os.mkfifo(root / "pipe.md")
    with Sandbox(timeout=5) as sandbox, finishes_within(30):
        with pytest.raises(ExtractionError, match="it is a FIFO, and only regular files are read"):
            sandbox.extract_file(root / "pipe.md", "text", root=root)
        assert "ordinary handbook text" in sandbox.extract_file(root / "inside.md", "text", root=root).text


def test_the_sandbox_child_gets_no_secrets_and_its_reply_is_capped(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_PROBE_SECRET", "hunter2")
    with Sandbox(timeout=10) as sandbox:
        sandbox.extract_file(root / "inside.md", "text", root=root)
        child = sandbox._child
        assert child is not None
        environment = Path(f"/proc/{child.pid}/environ").read_bytes().split(b"\0")
    names = {entry.split(b"=", 1)[0] for entry in environment if entry}
    assert b"KB_PROBE_SECRET" not in names and b"DATABASE_URL" not in names
    assert b"DJANGO_SECRET_KEY" not in names and b"PYTHONPATH" in names
    (root / "long.md").write_text("word " * 10_000)
    with Sandbox(timeout=10, max_reply_bytes=20_000) as sandbox:
        with pytest.raises(ExtractionError, match="larger than 20000 bytes"):
            sandbox.extract_file(root / "long.md", "text", root=root)
        assert sandbox.extract_file(root / "inside.md", "text", root=root).text  # a new child goes on


def test_ingest_of_several_paths_walks_within_the_boundary(root: Path, outside: Path) -> None:
    from knowledge.connectors.files import iter_files
    from knowledge.connectors.types import SourceError

    (root / "leak.md").symlink_to(outside / "secret.md")
    errors: list[SourceError] = []
    documents = list(iter_files([root, root / "inside.md"], errors))
    assert [d.external_id for d in documents] == ["inside.md", "inside.md"]
    assert [e.message for e in errors] == [
        "leak.md: skipped: a symbolic link that leaves the connector's folder"
    ]
    assert FilesystemKind().list_source({"path": str(root)}).documents[0].external_id == "inside.md"
