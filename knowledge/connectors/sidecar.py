"""Per-folder ACL files (`.kbacl.json`): a folder's file applies to it and to every subfolder without one.

    {"public": false, "users": ["erin@example.com"], "groups": ["engineering"]}

The nearest file wins (no merging). A file that cannot be parsed makes the documents under it errors
rather than falling back to a wider ACL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from knowledge.connectors.types import SourceAcl

SIDECAR_NAME = ".kbacl.json"
MAX_SIDECAR_BYTES = 1024 * 1024
MAX_NAMES = 1000


class SidecarProblem(Exception):
    """An ACL file that cannot be used; the message names it."""


def parse_sidecar(raw: Any) -> SourceAcl:
    """The ACL described by a parsed sidecar; SidecarProblem when it is malformed."""
    if not isinstance(raw, dict) or set(raw) - {"public", "users", "groups"}:
        raise SidecarProblem('expected {"public": bool, "users": [e-mails], "groups": [names]}')
    public = raw.get("public", False)
    if not isinstance(public, bool):
        raise SidecarProblem('"public" must be true or false')
    lists: dict[str, list[str]] = {}
    for key in ("users", "groups"):
        names = raw.get(key, [])
        if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
            raise SidecarProblem(f'"{key}" must be a list of non-empty strings')
        if len(names) > MAX_NAMES:
            raise SidecarProblem(f'"{key}" names more than {MAX_NAMES} principals')
        lists[key] = [n.strip() for n in names]
    bad = [u for u in lists["users"] if "@" not in u]
    if bad:
        raise SidecarProblem(f"users must be e-mail addresses: {bad[:3]}")
    return SourceAcl.of(public=public, users=lists["users"], groups=lists["groups"])


class SidecarResolver:
    """The ACL of each folder under `root`, read once per folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[Path, SourceAcl | SidecarProblem | None] = {}

    def acl_for(self, folder: Path) -> SourceAcl | None:
        """The nearest sidecar's ACL at or above `folder` (within root); None when there is none.

        :raises SidecarProblem: when the nearest sidecar is malformed.
        """
        found = self._lookup(folder)
        if isinstance(found, SidecarProblem):
            raise found
        return found

    def _lookup(self, folder: Path) -> SourceAcl | SidecarProblem | None:
        if folder not in self._cache:
            own = self._read(folder / SIDECAR_NAME)
            if own is None and folder != self.root and self.root in folder.parents:
                own = self._lookup(folder.parent)
            self._cache[folder] = own
        return self._cache[folder]

    def _read(self, path: Path) -> SourceAcl | SidecarProblem | None:
        if not path.is_file():
            return None
        name = path.relative_to(self.root).as_posix()
        try:
            if path.stat().st_size > MAX_SIDECAR_BYTES:
                return SidecarProblem(f"{name}: larger than {MAX_SIDECAR_BYTES} bytes")
            return parse_sidecar(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            return SidecarProblem(f"{name}: cannot read it ({exc})")
        except SidecarProblem as exc:
            return SidecarProblem(f"{name}: {exc}")
