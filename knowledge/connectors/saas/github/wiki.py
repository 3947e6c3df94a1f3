"""A repository's wiki: the git repository `<web_url>/<owner>/<repo>.wiki.git` (GitHub has no REST
API for it), cloned bare and shallow into a temporary directory, with the token sent as an HTTP
header from the environment (never on the command line). Only blobs are read (`git cat-file`), never
a checkout, so a symlink in the wiki cannot point the worker at a file of its own."""

from __future__ import annotations

import base64
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

GIT_TIMEOUT = 120
NOT_FOUND = ("not found", "404", "does not appear to be a git repository")


class WikiUnreadable(Exception):
    """The wiki exists (or may) but could not be cloned or read."""


@dataclass(frozen=True)
class WikiFile:
    path: str
    sha: str
    size: int


class Wiki:
    """A bare clone of the wiki for the duration of a `with` block."""

    def __init__(self, web_url: str, repository: str, token: str) -> None:
        self.url = f"{web_url.rstrip('/')}/{repository}.wiki.git"
        self.token = token
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> Wiki:
        self._dir = tempfile.TemporaryDirectory(prefix="kb-wiki-")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._dir is not None:
            self._dir.cleanup()

    @property
    def git_dir(self) -> Path:
        assert self._dir is not None, "use Wiki in a with block"
        return Path(self._dir.name) / "wiki.git"

    def clone(self) -> bool:
        """True when cloned; False when the repository has no wiki (GitHub answers 404)."""
        try:
            self._git("clone", "--bare", "--depth", "1", "--quiet", "--no-tags", self.url, str(self.git_dir))
        except WikiUnreadable as exc:
            if any(marker in str(exc).casefold() for marker in NOT_FOUND):
                return False
            raise
        return True

    def files(self) -> list[WikiFile]:
        """The regular files at HEAD (symlinks and submodules are left out)."""
        listed = self._git("--git-dir", str(self.git_dir), "ls-tree", "-r", "-l", "-z", "HEAD")
        found = []
        for entry in listed.split(b"\0"):
            if not entry:
                continue
            meta, _, path = entry.partition(b"\t")
            mode, kind, sha, size = meta.split()
            if kind == b"blob" and mode in {b"100644", b"100755"}:
                found.append(WikiFile(path.decode("utf-8", "replace"), sha.decode(), int(size)))
        return found

    def read(self, sha: str) -> str:
        return self._git("--git-dir", str(self.git_dir), "cat-file", "blob", sha).decode("utf-8", "replace")

    def _git(self, *args: str) -> bytes:
        try:
            done = subprocess.run(  # noqa: S603 (fixed program, arguments never reach a shell)
                ["git", *args],  # noqa: S607
                capture_output=True,
                env=self._environment(),
                timeout=GIT_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise WikiUnreadable(f"git {args[0]}: {exc}") from exc
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise WikiUnreadable(f"git {args[0]}: {' '.join(message[-2:]) or done.returncode}")
        return done.stdout

    def _environment(self) -> dict[str, str]:
        """No user or system config, no prompt, no redirect, only the wiki's own scheme, and the token
        as a header."""
        scheme = urlsplit(self.url).scheme
        config = {
            "protocol.allow": "never",
            f"protocol.{scheme}.allow": "always",
            "http.followRedirects": "false",  # the clone never leaves the wiki's own URL
        }
        if self.token:
            basic = base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
            config["http.extraHeader"] = f"Authorization: Basic {basic}"
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(Path(self.git_dir).parent),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "/bin/false",
            "GIT_CONFIG_COUNT": str(len(config)),
        }
        for index, (key, value) in enumerate(config.items()):
            environment[f"GIT_CONFIG_KEY_{index}"] = key
            environment[f"GIT_CONFIG_VALUE_{index}"] = value
        return environment
