"""Property: whatever a synced folder holds (links in and out, special files, broken or nested ACL files),
a sync indexes nothing from outside it, gives no document a wider ACL than its nearest usable ACL file
(or the connector default) allows, and always finishes.

Each example builds a random tree, syncs it, rebuilds it differently over the same folder and syncs
again, checking after each sync. 12 examples in CI; BOUNDARY_EXAMPLES raises them.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge.connectors.walk import SIDECAR_NAME
from knowledge.models import Connector, Document
from knowledge.services.connector_sync import connector_sync
from tests.factories import ConnectorFactory, TenantFactory
from tests.knowledge.connectors.test_source_boundary import finishes_within

pytestmark = pytest.mark.django_db
EXAMPLES = int(os.environ.get("BOUNDARY_EXAMPLES", "12"))
FOLDERS = ["", "a", "a/b", "c"]
OUTSIDE_MARK = "outsidemarker"
USERS = ["ann@example.com", "bob@example.com"]
GROUPS = ["crew", "ops"]
FILE_KINDS = ["regular", "regular", "link_in", "link_out", "dangling", "fifo", "link_dir_out"]
SIDECAR_KINDS = ["none", "none", "valid", "valid", "broken", "deep", "folder", "fifo", "dangling", "link_out"]


@dataclass(frozen=True)
class Acl:
    public: bool = False
    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Tree:
    sidecars: dict[str, tuple[str, Acl]]
    files: dict[str, str]  # relative path -> kind


acls = st.builds(
    Acl,
    st.booleans(),
    st.frozensets(st.sampled_from(USERS)),
    st.frozensets(st.sampled_from(GROUPS)),
)
sidecars = st.tuples(st.sampled_from(SIDECAR_KINDS), acls)
names = st.sampled_from(["one.md", "two.txt", "three.md"])
trees = st.builds(
    Tree,
    st.fixed_dictionaries({folder: sidecars for folder in FOLDERS}),
    st.dictionaries(
        st.tuples(st.sampled_from(FOLDERS), names).map(lambda p: f"{p[0]}/{p[1]}".lstrip("/")),
        st.sampled_from(FILE_KINDS),
        max_size=8,
    ),
)


def build(tree: Tree, root: Path, outside: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    for folder in FOLDERS:
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "real.md").write_text("# Real\nthe target of links inside the folder")
    for folder, (kind, acl) in tree.sidecars.items():
        _sidecar(root / folder / SIDECAR_NAME, kind, acl, outside)
    for relative, kind in tree.files.items():
        path = root / relative
        if kind == "regular":
            path.write_text(f"# {relative}\ninside content of {relative}")
        elif kind == "link_in":
            path.symlink_to(root / "real.md")
        elif kind == "link_out":
            path.symlink_to(outside / "secret.md")
        elif kind == "link_dir_out":
            path.symlink_to(outside, target_is_directory=True)
        elif kind == "dangling":
            path.symlink_to(root / "missing.md")
        else:
            os.mkfifo(path)


def _sidecar(path: Path, kind: str, acl: Acl, outside: Path) -> None:
    body = {"public": acl.public, "users": sorted(acl.users), "groups": sorted(acl.groups)}
    if kind == "valid":
        path.write_text(json.dumps(body))
    elif kind == "broken":
        path.write_text('{"public": tru')
    elif kind == "deep":
        path.write_text("[" * 5000 + "]" * 5000)
    elif kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dangling":
        path.symlink_to(path.parent / "nowhere.json")
    elif kind == "link_out":
        path.symlink_to(outside / SIDECAR_NAME)


def expected_documents(tree: Tree) -> set[str]:
    readable = {path for path, kind in tree.files.items() if kind in ("regular", "link_in")}
    return readable | {"real.md"}


def allowed_acl(tree: Tree, relative: str, default: Acl) -> Acl:
    """The nearest ACL file at or above the file's folder: its ACL when usable, else nobody's."""
    folder = relative.rsplit("/", 1)[0] if "/" in relative else ""
    while True:
        kind, acl = tree.sidecars[folder]
        if kind == "valid":
            return acl
        if kind != "none":
            return Acl()
        if folder == "":
            return default
        folder = folder.rsplit("/", 1)[0] if "/" in folder else ""


def stored_acl(document: Document) -> Acl:
    principals = list(document.allowed_principals.values_list("kind", "external_id"))
    return Acl(
        document.is_public,
        frozenset(name for kind, name in principals if kind == "user"),
        frozenset(name for kind, name in principals if kind == "group"),
    )


def narrower_or_equal(stored: Acl, allowed: Acl) -> bool:
    if allowed.public:
        return True
    return not stored.public and stored.users <= allowed.users and stored.groups <= allowed.groups


def check(tree: Tree, connector: Connector, default: Acl) -> None:
    with finishes_within(120):
        connector_sync(connector=connector)
    documents = {d.external_id: d for d in connector.documents.filter(deleted_at__isnull=True)}
    assert set(documents) == expected_documents(tree)
    for relative, document in documents.items():
        assert OUTSIDE_MARK not in document.content, relative
        allowed = allowed_acl(tree, relative, default)
        assert narrower_or_equal(stored_acl(document), allowed), (relative, stored_acl(document), allowed)
        assert stored_acl(document) == allowed, relative  # and, here, exactly what the rules give


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(first=trees, second=trees, default_public=st.booleans())
def test_a_sync_never_reads_outside_its_folder_nor_widens_an_acl(
    tmp_path: Path, first: Tree, second: Tree, default_public: bool
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.md").write_text(f"# Secret\n{OUTSIDE_MARK} of the worker's machine")
    (outside / SIDECAR_NAME).write_text(json.dumps({"public": True}))
    root = tmp_path / "docs"
    connector = ConnectorFactory.create(
        tenant=TenantFactory.create(),
        kind="filesystem",
        config={"path": str(root)},
        default_is_public=default_public,
    )
    default = Acl(public=default_public)
    for tree in (first, second):
        build(tree, root, outside)
        check(tree, connector, default)
