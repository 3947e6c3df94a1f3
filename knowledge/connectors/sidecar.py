"""Per-folder ACL files (`.kbacl.json`): a folder's file applies to it and to every subfolder without one.

    {"public": false, "users": ["erin@example.com"], "groups": ["engineering"]}

The nearest file wins (no merging). A sidecar that cannot be used (malformed, too large or deep, not a
regular file, a link out of the folder) fails closed: the documents under it become private and are
errors of the sync run; they never fall back to a parent's or the connector's wider ACL.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from knowledge.connectors.boundary import OutsideBoundary, TooLarge, read_inside, real_root
from knowledge.connectors.types import SourceAcl
from knowledge.connectors.walk import SIDECAR_NAME
from knowledge.json_values import raw_json_depth

MAX_SIDECAR_BYTES = 1024 * 1024
MAX_SIDECAR_DEPTH = 4  # the format needs 2: an object of lists
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
    """The ACL of each folder under `root`, read once per folder.

    A sidecar that exists in any form (a file, a folder, a FIFO, a link, broken or not) but cannot be
    read as a valid ACL is a problem, never "no sidecar": the documents it governs must not inherit a
    wider ACL from a parent folder or the connector's default.
    """

    def __init__(self, root: Path, boundary: str | None = None) -> None:
        self.root = root
        self.boundary = boundary or real_root(root)
        self._cache: dict[Path, SourceAcl | SidecarProblem | None] = {}

    def acl_for(self, folder: Path) -> SourceAcl | None:
        """The nearest sidecar's ACL at or above `folder` (within root); None when there is none.

        :raises SidecarProblem: when the nearest sidecar is malformed or unreadable.
        """
        found = self._lookup(folder)
        if isinstance(found, SidecarProblem):
            raise found
        return found

    def _lookup(self, folder: Path) -> SourceAcl | SidecarProblem | None:
        """Walks up without recursion: a folder tree may be deeper than Python's stack."""
        passed: list[Path] = []
        found: SourceAcl | SidecarProblem | None = None
        node = folder
        while True:
            if node in self._cache:
                found = self._cache[node]
                break
            found = self._read(node / SIDECAR_NAME)
            if found is not None:
                self._cache[node] = found
                break
            passed.append(node)
            if node == self.root or self.root not in node.parents:
                break
            node = node.parent
        for node in passed:
            self._cache[node] = found
        return found

    def _read(self, path: Path) -> SourceAcl | SidecarProblem | None:
        name = path.relative_to(self.root).as_posix()
        try:
            os.lstat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return SidecarProblem(f"{name}: cannot read it ({exc.strerror or exc})")
        try:
            text = read_inside(path, self.boundary, MAX_SIDECAR_BYTES).decode("utf-8")
            if raw_json_depth(text) > MAX_SIDECAR_DEPTH:
                return SidecarProblem(f"{name}: nested more than {MAX_SIDECAR_DEPTH} levels deep")
            return parse_sidecar(json.loads(text))
        except OutsideBoundary as exc:
            return SidecarProblem(f"{name}: cannot be used ({exc})")
        except TooLarge:
            return SidecarProblem(f"{name}: larger than {MAX_SIDECAR_BYTES} bytes")
        except OSError as exc:
            return SidecarProblem(f"{name}: cannot read it ({exc.strerror or exc})")
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            return SidecarProblem(f"{name}: cannot read it ({exc})")
        except SidecarProblem as exc:
            return SidecarProblem(f"{name}: {exc}")
