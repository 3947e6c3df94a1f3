"""A git repository served over smart HTTP by git's own `git http-backend` (run as a CGI program), for
a GitHub wiki in the tests: pages are committed to a bare repository that a real `git clone` reads."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import weakref
from pathlib import Path

from knowledge.source_stubs.server import Reply, Request

BACKEND = "/usr/lib/git-core/git-http-backend"


class GitRepository:
    """A bare repository `<root>/<name>` whose whole content `publish` replaces with one commit."""

    def __init__(self, name: str) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="stub-git-"))
        weakref.finalize(self, shutil.rmtree, self.root, ignore_errors=True)
        self.name = name
        self.bare = self.root / name
        self.bare.parent.mkdir(parents=True, exist_ok=True)
        self._git("init", "--bare", "--quiet", "--initial-branch=master", str(self.bare))

    def publish(self, pages: dict[str, str], symlinks: dict[str, str] | None = None) -> None:
        with tempfile.TemporaryDirectory(prefix="stub-git-tree-") as name:
            self._commit(Path(name), pages, symlinks or {})

    def _commit(self, tree: Path, pages: dict[str, str], symlinks: dict[str, str]) -> None:
        for path, text in pages.items():
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            (tree / path).write_text(text)
        for path, target in symlinks.items():
            (tree / path).symlink_to(target)
        work = ["--git-dir", str(self.bare), "--work-tree", str(tree)]
        self._git(*work, "add", "--all")
        self._git(*work, "-c", "user.name=stub", "-c", "user.email=stub@example.com", "commit", "-qm", "wiki")

    def answer(self, request: Request) -> Reply:
        """The CGI exchange: the request as environment and stdin, the reply from stdout's headers."""
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": request.path,
            "QUERY_STRING": "&".join(f"{k}={v}" for k, v in request.query.items()),
            "REQUEST_METHOD": request.method,
            "CONTENT_TYPE": request.headers.get("content-type", ""),
            "CONTENT_LENGTH": str(len(request.body)),
            "GIT_PROTOCOL": request.headers.get("git-protocol", ""),
            "HTTP_CONTENT_ENCODING": request.headers.get("content-encoding", ""),
            "REMOTE_ADDR": "127.0.0.1",
        }
        done = subprocess.run(  # noqa: S603 (git's own program, fixed path)
            [BACKEND], input=request.body, capture_output=True, env=environment, timeout=60, check=False
        )
        head, _, body = done.stdout.partition(b"\r\n\r\n")
        status, headers = 200, {}
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers[name.strip()] = value.strip()
        return Reply(status, raw=body, headers=headers)

    def _git(self, *args: str) -> None:
        environment = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(self.root)}
        subprocess.run(["git", *args], check=True, capture_output=True, env=environment)  # noqa: S603, S607
