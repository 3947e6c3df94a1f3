"""Where a GitHub sync left off: the file tree's ETag and the newest issue update seen, valid only
for the content settings they were taken with (another branch or file filter lists everything)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

CONTENT_KEYS = ("extensions", "max_file_bytes", "issues", "pull_requests")


def settings_fingerprint(config: dict[str, Any], branch: str) -> str:
    chosen = {key: config.get(key) for key in CONTENT_KEYS}
    return hashlib.sha256(json.dumps([branch, chosen], sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass
class GithubCursor:
    fingerprint: str
    tree_etag: str = ""
    since: str = ""  # the newest `updated_at` of the issues and pull requests read in full

    @classmethod
    def parse(cls, raw: str, fingerprint: str) -> GithubCursor:
        """The stored cursor, or an empty one when there is none or it was taken with other settings."""
        try:
            data = json.loads(raw) if raw else {}
        except ValueError:
            data = {}
        if not isinstance(data, dict) or data.get("settings") != fingerprint:
            return cls(fingerprint)
        return cls(fingerprint, str(data.get("tree_etag") or ""), str(data.get("since") or ""))

    def dump(self) -> str:
        return json.dumps({"settings": self.fingerprint, "tree_etag": self.tree_etag, "since": self.since})
