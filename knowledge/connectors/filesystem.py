"""The filesystem kind: every matching regular file under a folder, with per-folder ACL files.

What may be read is decided by `knowledge.connectors.boundary` (nothing whose real path leaves the
folder, nothing but regular files). Files are read and parsed in the extraction sandbox
(`knowledge.connectors.extract`: PDF, Word, PowerPoint, HTML, Markdown, text), each bounded in size
(`max_file_bytes`) and time (`extract_timeout_seconds`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from knowledge.connectors import files
from knowledge.connectors.base import ConnectorKind
from knowledge.connectors.extract.sandbox import DEFAULT_TIMEOUT_SECONDS, Sandbox
from knowledge.connectors.sidecar import SidecarProblem, SidecarResolver
from knowledge.connectors.types import Listing, SourceAcl, SourceState
from knowledge.connectors.walk import DEFAULT_PATTERNS, Walk

PRIVATE = SourceAcl()  # what a document under an unusable ACL file gets: nobody but a bypass sees it
MAX_TIMEOUT_SECONDS = 600


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

    def list_source(
        self, config: dict[str, Any], state: SourceState | None = None, *, credential: str = ""
    ) -> Listing:
        listing = Listing()
        root = Path(config["path"])
        if not root.is_dir():
            listing.fail_listing(f"{root} is not a readable directory")
            return listing
        patterns = config.get("patterns") or DEFAULT_PATTERNS
        limit = int(config.get("max_file_bytes", files.DEFAULT_MAX_BYTES))
        walk = Walk(root, patterns, listing)
        sidecars = SidecarResolver(root, walk.boundary)
        timeout = float(config.get("extract_timeout_seconds", DEFAULT_TIMEOUT_SECONDS))
        with Sandbox(timeout=timeout, max_bytes=limit) as sandbox:
            for path in walk.files():
                _load(path, walk, sidecars, listing, sandbox)
        return listing


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _load(path: Path, walk: Walk, sidecars: SidecarResolver, listing: Listing, sandbox: Sandbox) -> None:
    relative = files.relative_id(path, walk.root)
    try:
        acl = sidecars.acl_for(path.parent)
    except SidecarProblem as exc:  # fail closed: private, and an error of the run
        listing.make_private(relative, str(exc))
        acl = PRIVATE
    try:
        document = files.load_file(path, walk.root, sandbox=sandbox, boundary=walk.boundary)
        if document is not None:
            listing.documents.append(replace(document, acl=acl))
    except files.FileProblem as exc:
        listing.fail_item(relative, str(exc))
