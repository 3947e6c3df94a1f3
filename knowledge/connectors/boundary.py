"""The source boundary: a connector reads only regular files whose real path stays under its root.

Rules (the README's security section states them too):

* A path is read only when its real path (every symbolic link resolved) is the root or under it.
* A symbolic link is followed when it resolves to a regular file under the root; the document keeps the
  link's own path as its id. A link to a folder is never descended (the folder's files are listed under
  their real paths). A link that leaves the root, a broken link and a link loop are skipped and reported.
* Only regular files are opened: FIFOs, sockets and devices are skipped and reported, never opened.
* Opening uses `O_NOFOLLOW | O_NONBLOCK` on the resolved path, checks `S_ISREG` on the open file, and
  checks the real path of the open descriptor again (`/proc/self/fd`), so a folder swapped for a link
  between the check and the open is caught. Nothing here can block on a FIFO.

No Django imports: the extraction child process uses this module too.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
READ_CHUNK = 1 << 20


class OutsideBoundary(Exception):
    """A path the boundary refuses to read; the message says why (without the link's target)."""


def real_root(root: Path | str) -> str:
    """The root's real path, the reference every check compares with."""
    return os.path.realpath(root)


def is_inside(real_path: str, root: str) -> bool:
    """Whether a real path is the (real) root or lies under it."""
    return real_path == root or real_path.startswith(root.rstrip(os.sep) + os.sep)


def special_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def link_problem(path: str, root: str) -> tuple[str | None, os.stat_result | None]:
    """For a symbolic link under root: (why it is skipped or None, the stat of its target)."""
    target = os.path.realpath(path)
    if not is_inside(target, root):
        return "a symbolic link that leaves the connector's folder", None
    try:
        found = os.stat(path)
    except OSError as exc:
        return f"a broken symbolic link ({exc.strerror or exc})", None
    return None, found


def open_inside(path: Path | str, root: str) -> int:
    """A read-only descriptor of the regular file at `path`, which must resolve under `root`.

    :raises OutsideBoundary: when the path resolves outside root or is not a regular file.
    :raises OSError: when the file cannot be opened (missing, no permission).
    """
    real = os.path.realpath(path)
    if not is_inside(real, root):
        raise OutsideBoundary("its real path leaves the connector's folder")
    try:
        fd = os.open(real, OPEN_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link loop, or the last component became a link after resolving
            raise OutsideBoundary("a symbolic link that cannot be resolved (a loop?)") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OutsideBoundary(f"it is {special_kind(mode)}, and only regular files are read")
        opened = _descriptor_path(fd)
        if opened is not None and not is_inside(opened, root):
            raise OutsideBoundary("a folder on its path became a link that leaves the connector's folder")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _descriptor_path(fd: int) -> str | None:
    """The real path the kernel opened (Linux); None where /proc is not available."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def read_inside(path: Path | str, root: str, max_bytes: int) -> bytes:
    """The bytes of a regular file under root, at most `max_bytes`.

    :raises OutsideBoundary: as `open_inside`.
    :raises TooLarge: when the file holds more than `max_bytes`.
    """
    fd = open_inside(path, root)
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise TooLarge(f"{size} bytes is larger than the {max_bytes}-byte limit")
        parts, total = [], 0
        while total <= max_bytes:
            data = os.read(fd, min(READ_CHUNK, max_bytes + 1 - total))
            if not data:
                break
            parts.append(data)
            total += len(data)
        if total > max_bytes:  # it grew after the size check
            raise TooLarge(f"more than the {max_bytes}-byte limit")
        return b"".join(parts)
    finally:
        os.close(fd)


class TooLarge(Exception):
    """A file larger than the limit; the message gives both sizes."""
