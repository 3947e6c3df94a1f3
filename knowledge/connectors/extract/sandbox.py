"""Extraction in a child process, with a wall-clock timeout and a memory limit per file.

One child serves many files (starting Python and importing the parsers costs ~0.5 s). Every file, of
every format, is opened and read in the child (through `knowledge.connectors.boundary`), so a file that
blocks or takes longer than the timeout gets the child killed (the next file starts a new one); one
that needs more memory than the limit fails inside the child (or kills it) without touching the
caller. A plain `subprocess`, not `multiprocessing`, because Celery's prefork workers may not have
children of that kind. The child gets a scrubbed environment (no secrets of the caller's), and only
JSON crosses back, never pickles, within a size cap: a compromised parser cannot run code in the
caller, read its settings from the environment, or flood its memory.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from knowledge.connectors.boundary import real_root
from knowledge.connectors.extract.base import SANDBOXED, Extracted, ExtractionError
from knowledge.connectors.extract.formats import extract_bytes

DEFAULT_TIMEOUT_SECONDS = 60.0
DEFAULT_MEMORY_MB = 2048
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
# A reply holds the text as JSON (UTF-8): well above what a document may hold (2,000,000 characters).
DEFAULT_MAX_REPLY_BYTES = 32 * 1024 * 1024
READ_CHUNK = 1 << 20
# The only variables the child sees: no database URL, secret key or API key of the caller's.
CHILD_ENVIRONMENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONNOUSERSITE": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}
PROJECT_ROOT = Path(__file__).resolve().parents[3]
WORKER = "knowledge.connectors.extract.worker"


class Sandbox:
    """Extracts files one at a time in a child process; use as a context manager (it stops the child)."""

    def __init__(
        self,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        memory_mb: int = DEFAULT_MEMORY_MB,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.max_bytes = max_bytes
        self.max_reply_bytes = max_reply_bytes
        self._child: subprocess.Popen[bytes] | None = None
        self.started = 0  # child processes started (a killed child is replaced)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            if child.stdin:
                child.stdin.close()
            try:
                child.wait(timeout=2)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()

    def extract_file(self, path: Path, fmt: str, *, root: Path | str | None = None) -> Extracted:
        """The text of the file at `path` read as `fmt`, opened in the child only when its real path
        lies under `root` (default: the folder it is in) and it is a regular file; ExtractionError when
        it is not, or when reading or extracting fails or takes too long."""
        boundary = real_root(root if root is not None else path.parent)
        return self._request(
            {"path": str(path), "root": boundary, "format": fmt, "max_bytes": self.max_bytes}
        )

    def extract_bytes(self, data: bytes, fmt: str, charset: str | None = None) -> Extracted:
        """Like `extract_file`, for bytes in memory (a fetched web page)."""
        if fmt not in SANDBOXED:
            return extract_bytes(fmt, data, charset)
        with tempfile.NamedTemporaryFile(prefix="kb-extract-", suffix=f".{fmt}") as handle:
            handle.write(data)
            handle.flush()
            return self._request(
                {
                    "path": handle.name,
                    "root": real_root(Path(handle.name).parent),
                    "format": fmt,
                    "charset": charset,
                    "max_bytes": len(data),
                }
            )

    def _request(self, request: dict[str, Any]) -> Extracted:
        child = self._ensure_child()
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(json.dumps(request).encode() + b"\n")
            child.stdin.flush()
            line = _read_line(child.stdout, time.monotonic() + self.timeout, self.max_reply_bytes)
        except BrokenPipeError:
            line = b""
        except TimeoutError:
            self._kill()
            raise ExtractionError(f"extraction took longer than {self.timeout:g} s (stopped)") from None
        except ReplyTooLarge:
            self._kill()
            raise ExtractionError(
                f"the extracted text is larger than {self.max_reply_bytes} bytes (stopped)"
            ) from None
        if not line:
            self._kill()
            raise ExtractionError(
                f"the extractor crashed (memory limit {self.memory_mb} MB, or a parser fault)"
            )
        reply = json.loads(line)
        if not reply["ok"]:
            raise ExtractionError(reply["error"])
        return Extracted(text=reply["text"], title=reply["title"], metadata=reply["metadata"])

    def _ensure_child(self) -> subprocess.Popen[bytes]:
        if self._child is None or self._child.poll() is not None:
            env = {**CHILD_ENVIRONMENT, "PYTHONPATH": str(PROJECT_ROOT), "HOME": tempfile.gettempdir()}
            command = [sys.executable, "-m", WORKER, "--memory-mb", str(self.memory_mb)]
            self._child = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
            )
            self.started += 1
        return self._child

    def _kill(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            child.kill()
            child.wait()


class ReplyTooLarge(Exception):
    """The child's reply passed the size cap."""


def _read_line(stream: IO[bytes], deadline: float, max_bytes: int) -> bytes:
    """One reply line from the child, or TimeoutError at `deadline` (ReplyTooLarge past `max_bytes`);
    b"" when the child died."""
    os.set_blocking(stream.fileno(), False)
    parts: list[bytes] = []
    size = 0
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                raise TimeoutError
            data = os.read(stream.fileno(), READ_CHUNK)
            if not data:
                return b""
            parts.append(data)
            size += len(data)
            if size > max_bytes:
                raise ReplyTooLarge
            if data.endswith(b"\n"):
                return b"".join(parts)
