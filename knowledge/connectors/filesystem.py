"""The filesystem kind: every matching file under a folder, with per-folder ACL files.

Files are read by the extractors of `knowledge.connectors.extract` (PDF, Word, PowerPoint, HTML,
Markdown, text), each bounded in size (`max_file_bytes`) and time (`extract_timeout_seconds`).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from knowledge.connectors import files
from knowledge.connectors.base import ConnectorKind
from knowledge.connectors.extract.base import SUFFIXES
from knowledge.connectors.extract.sandbox import DEFAULT_TIMEOUT_SECONDS, Sandbox
from knowledge.connectors.sidecar import SIDECAR_NAME, SidecarProblem, SidecarResolver
from knowledge.connectors.types import Listing, SourceState

DEFAULT_PATTERNS = [f"**/*{suffix}" for suffix in SUFFIXES]
MAX_TIMEOUT_SECONDS = 600


def matches(relative: str, patterns: list[str]) -> bool:
    return any(
        fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(relative, p.removeprefix("**/")) for p in patterns
    )


class FilesystemKind(ConnectorKind):
    name = "filesystem"
    label = "Filesystem"
    config_keys = frozenset({"path", "patterns", "max_file_bytes", "extract_timeout_seconds"})

    def check(self, config: dict[str, Any]) -> dict[str, str]:
        errors: dict[str, str] = {}
        path = config.get("path")
        if not isinstance(path, str) or not path.startswith("/"):
            errors["config"] = "path: required: an absolute directory path, e.g. /srv/docs"
        patterns = config.get("patterns", DEFAULT_PATTERNS)
        if not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns):
            errors.setdefault("config", "patterns: must be a list of glob patterns, e.g. ['**/*.md']")
        limit = config.get("max_file_bytes", files.DEFAULT_MAX_BYTES)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            errors.setdefault("config", "max_file_bytes: must be a positive integer")
        timeout = config.get("extract_timeout_seconds", DEFAULT_TIMEOUT_SECONDS)
        if not _is_number(timeout) or not 0 < timeout <= MAX_TIMEOUT_SECONDS:
            errors.setdefault(
                "config",
                f"extract_timeout_seconds: must be a number of seconds in (0, {MAX_TIMEOUT_SECONDS}]",
            )
        return errors

    def list_source(self, config: dict[str, Any], state: SourceState | None = None) -> Listing:
        listing = Listing()
        root = Path(config["path"])
        if not root.is_dir():
            listing.fail_listing(f"{root} is not a readable directory")
            return listing
        patterns = config.get("patterns") or DEFAULT_PATTERNS
        limit = int(config.get("max_file_bytes", files.DEFAULT_MAX_BYTES))
        sidecars = SidecarResolver(root)
        timeout = float(config.get("extract_timeout_seconds", DEFAULT_TIMEOUT_SECONDS))
        with Sandbox(timeout=timeout, max_bytes=limit) as sandbox:
            for path in _walk(root, listing):
                relative = files.relative_id(path, root)
                if path.name != SIDECAR_NAME and matches(relative, patterns):
                    _load(path, root, limit, sidecars, listing, sandbox)
        return listing


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _walk(root: Path, listing: Listing) -> list[Path]:
    """Every file under root, sorted; an unreadable folder makes the listing incomplete."""

    def failed(error: OSError) -> None:
        listing.fail_listing(f"cannot list {error.filename}: {error.strerror or error}")

    found = [Path(folder) / name for folder, _, names in os.walk(root, onerror=failed) for name in names]
    return sorted(found)


def _load(
    path: Path, root: Path, limit: int, sidecars: SidecarResolver, listing: Listing, sandbox: Sandbox
) -> None:
    relative = files.relative_id(path, root)
    try:
        acl = sidecars.acl_for(path.parent)  # a malformed ACL file fails before any parsing
        document = files.load_file(path, root, max_bytes=limit, sandbox=sandbox)
        if document is not None:
            listing.documents.append(replace(document, acl=acl))
    except (files.FileProblem, SidecarProblem) as exc:
        listing.fail_item(relative, str(exc))
