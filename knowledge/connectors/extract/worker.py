"""The sandbox's child process: reads requests on stdin, extracts, writes one JSON line per request.

Request: one JSON line `{"path": ..., "root": ..., "format": ..., "charset": ..., "max_bytes": ...}`;
the file at `path` is opened here, only when it is a regular file whose real path lies under `root`
(`knowledge.connectors.boundary`), so untrusted bytes are only ever read and parsed in this process,
under the parent's time limit. Reply: `{"ok": true, "text", "title", "metadata"}` or `{"ok": false,
"error"}`. The memory limit (`--memory-mb`) is set on this process before anything is parsed; the
parent enforces the time limit by killing it.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
from typing import Any

from knowledge.connectors.boundary import OutsideBoundary, TooLarge, read_inside
from knowledge.connectors.extract.base import ExtractionError
from knowledge.connectors.extract.formats import extract_bytes

MAX_ERROR_CHARS = 500


def _limit_memory(megabytes: int) -> None:
    if megabytes > 0:
        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def handle(request: dict[str, Any]) -> dict[str, Any]:
    try:
        data = read_inside(request["path"], request["root"], int(request["max_bytes"]))
    except (OutsideBoundary, TooLarge) as exc:
        return {"ok": False, "error": str(exc)}
    except OSError as exc:
        return {"ok": False, "error": f"cannot read: {exc.strerror or exc}"}
    try:
        extracted = extract_bytes(request["format"], data, request.get("charset"))
    except ExtractionError as exc:
        return {"ok": False, "error": str(exc)[:MAX_ERROR_CHARS]}
    except MemoryError:
        return {"ok": False, "error": "extraction ran out of memory (the file may be a decompression bomb)"}
    except Exception as exc:  # any parser failure on hostile or corrupt input is that file's error
        label = {"pdf": "PDF", "docx": "Word (.docx)", "pptx": "PowerPoint (.pptx)"}.get(request["format"])
        what = f"not a readable {label} file" if label else "cannot extract its text"
        return {"ok": False, "error": f"{what} ({type(exc).__name__}: {exc})"[:MAX_ERROR_CHARS]}
    return {"ok": True, "text": extracted.text, "title": extracted.title, "metadata": extracted.metadata}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memory-mb", type=int, default=0)
    _limit_memory(parser.parse_args().memory_mb)
    for line in sys.stdin.buffer:
        reply = handle(json.loads(line))
        sys.stdout.buffer.write(json.dumps(reply).encode() + b"\n")
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
