"""Walking a connector's folder within the source boundary: which files a sync may read, and why the
others are skipped (`knowledge.connectors.boundary` has the rules)."""

from __future__ import annotations

import fnmatch
import os
import stat
from pathlib import Path

from knowledge.connectors.boundary import link_problem, real_root, special_kind
from knowledge.connectors.extract.base import SUFFIXES
from knowledge.connectors.types import Listing

SIDECAR_NAME = ".kbacl.json"
DEFAULT_PATTERNS = [f"**/*{suffix}" for suffix in SUFFIXES]


def matches(relative: str, patterns: list[str]) -> bool:
    return any(
        fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(relative, p.removeprefix("**/")) for p in patterns
    )


def relative_id(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path != root else path.name


class Walk:
    """The files under a root that the boundary lets a sync read (`knowledge.connectors.boundary`).

    Folders are walked without following links and without recursion. Entries the rules skip (links
    out of the folder, broken links, FIFOs, sockets, devices) are reported on the listing when their
    name matches the patterns or is an ACL file, and are neither read nor kept (a document indexed
    from one earlier is removed). An unreadable folder makes the listing incomplete.
    """

    def __init__(self, root: Path, patterns: list[str], listing: Listing) -> None:
        self.root = root
        self.boundary = real_root(root)
        self.patterns = patterns
        self.listing = listing

    def files(self) -> list[Path]:
        found: list[Path] = []
        folders = [self.root]
        while folders:
            folder = folders.pop()
            try:
                with os.scandir(folder) as entries:
                    listed = list(entries)
            except OSError as exc:
                self.listing.fail_listing(f"cannot list {exc.filename}: {exc.strerror or exc}")
                continue
            for entry in listed:
                self._entry(entry, found, folders)
        return sorted(found)

    def wanted(self, relative: str, name: str) -> bool:
        return name == SIDECAR_NAME or matches(relative, self.patterns)

    def _entry(self, entry: os.DirEntry[str], found: list[Path], folders: list[Path]) -> None:
        path = Path(entry.path)
        relative = relative_id(path, self.root)
        try:
            if entry.is_dir(follow_symlinks=False):
                folders.append(path)
                return
            if entry.is_symlink():
                self._link(path, relative, entry.name, found)
                return
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError as exc:
            self._skip(relative, entry.name, f"cannot read it ({exc.strerror or exc})")
            return
        if stat.S_ISREG(mode):
            if entry.name != SIDECAR_NAME and matches(relative, self.patterns):
                found.append(path)
        else:
            self._skip(relative, entry.name, f"{special_kind(mode)} (only regular files are read)")

    def _link(self, path: Path, relative: str, name: str, found: list[Path]) -> None:
        problem, target = link_problem(str(path), self.boundary)
        if problem is not None:
            self._skip(relative, name, problem, always=True)
        elif target is not None and stat.S_ISREG(target.st_mode):
            if name != SIDECAR_NAME and matches(relative, self.patterns):
                found.append(path)
        elif target is not None and not stat.S_ISDIR(target.st_mode):  # links to folders: not followed
            kind = special_kind(target.st_mode)
            self._skip(relative, name, f"a link to {kind} (only regular files are read)")

    def _skip(self, relative: str, name: str, reason: str, *, always: bool = False) -> None:
        if always or self.wanted(relative, name):
            self.listing.skip_item(relative, f"skipped: {reason}")
