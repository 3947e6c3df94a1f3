"""A Drive file's document: Google Docs exported as HTML, Sheets as CSV, Slides as text; PDFs, Office
files and text files downloaded and extracted in the sandbox. A file whose `version` is the stored one
is kept, not fetched again (its ACL is still re-read). `Scope` says whether a file lies under one of
the folders the admin chose, following `parents` up."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from knowledge.connectors.extract.base import ExtractionError, format_for_media_type, format_for_suffix
from knowledge.connectors.extract.sandbox import Sandbox
from knowledge.connectors.saas.client import ApiError
from knowledge.connectors.saas.drive.access import PERMISSION_FIELDS, DriveAccess, Unknowable
from knowledge.connectors.saas.drive.api import ALL_DRIVES, DriveApi
from knowledge.connectors.types import Listing, SourceAcl, SourceDocument, SourceState

FOLDER = "application/vnd.google-apps.folder"
GOOGLE = "application/vnd.google-apps."
#: Google-native files and what they are exported as (media type, extractor format).
EXPORTS = {
    GOOGLE + "document": ("text/html", "html"),
    GOOGLE + "spreadsheet": ("text/csv", "text"),
    GOOGLE + "presentation": ("text/plain", "text"),
}
FILE_FIELDS = (
    "id,name,mimeType,version,modifiedTime,webViewLink,size,parents,trashed,driveId,"
    f"permissions({PERMISSION_FIELDS})"
)
MAX_DEPTH = 100


def external_id(file_id: str) -> str:
    return f"file:{file_id}"


class Scope:
    """Files under `folders` (every file the account sees when there are none)."""

    def __init__(self, api: DriveApi, folders: list[str]) -> None:
        self.api, self.folders = api, set(folders)
        self.parents: dict[str, list[str]] = {}

    def learn(self, file: dict[str, Any]) -> None:
        self.parents[str(file["id"])] = [str(p) for p in file.get("parents") or []]

    def contains(self, file: dict[str, Any]) -> bool:
        """Whether an ancestor is one of the folders; ApiError when a parent cannot be read."""
        if not self.folders:
            return True
        frontier, seen = [str(p) for p in file.get("parents") or []], set()
        for _ in range(MAX_DEPTH):
            if not frontier:
                return False
            if self.folders & set(frontier):
                return True
            seen.update(frontier)
            frontier = [p for f in frontier for p in self._parents_of(f) if p not in seen]
        return False

    def _parents_of(self, folder_id: str) -> list[str]:
        if folder_id not in self.parents:
            try:
                body = self.api.get(f"drive/v3/files/{folder_id}", fields="id,parents", **ALL_DRIVES)
            except ApiError as exc:
                if not (exc.gone or exc.denied):
                    raise
                body = {}  # a folder this account cannot see: the chain ends there
            self.parents[folder_id] = [str(p) for p in body.get("parents") or []]
        return self.parents[folder_id]


class DriveContent:
    def __init__(
        self,
        api: DriveApi,
        access: DriveAccess,
        sandbox: Sandbox,
        state: SourceState | None,
        *,
        max_bytes: int,
    ) -> None:
        self.api, self.access, self.sandbox, self.state = api, access, sandbox, state
        self.max_bytes = max_bytes

    def file(self, file: dict[str, Any], listing: Listing) -> None:
        """Add the file's document (or keep it, or make it private) to `listing`."""
        eid = external_id(str(file["id"]))
        fmt = _format(file)
        if fmt is None:
            return  # a folder, an image, a form: nothing to extract
        try:
            acl = self.access.file_acl(file)
        except Unknowable as exc:
            listing.make_private(eid, str(exc))
            acl = SourceAcl()
        version = str(file.get("version") or "")
        if int(file.get("size") or 0) > self.max_bytes:
            listing.fail_item(eid, f"larger than the {self.max_bytes}-byte limit")
            listing.acls[eid] = acl
            return
        stored = self.state.metadata(eid) if self.state is not None else None
        if version and stored is not None and stored.get("version") == version:
            listing.keep_with_acl(eid, acl)
            return
        try:
            extracted = self.sandbox.extract_bytes(self._bytes(file), fmt)
        except (ApiError, ExtractionError) as exc:
            listing.fail_item(eid, f"could not be read ({exc})")
            listing.acls[eid] = acl
            return
        title = str(file.get("name") or extracted.title or file["id"])
        listing.documents.append(
            SourceDocument(
                external_id=eid,
                content=extracted.text if extracted.text.strip() else title,
                title=title[:500],
                source_url=str(file.get("webViewLink") or ""),
                metadata={
                    "kind": "file",
                    "version": version,
                    "mime_type": str(file.get("mimeType") or ""),
                    "format": fmt,
                },
                acl=acl,
            )
        )

    def _bytes(self, file: dict[str, Any]) -> bytes:
        mime, file_id = str(file.get("mimeType") or ""), str(file["id"])
        if mime in EXPORTS:
            return self.api.download(f"drive/v3/files/{file_id}/export", mimeType=EXPORTS[mime][0])
        return self.api.download(f"drive/v3/files/{file_id}", alt="media", **ALL_DRIVES)


def _format(file: dict[str, Any]) -> str | None:
    mime = str(file.get("mimeType") or "")
    if mime in EXPORTS:
        return EXPORTS[mime][1]
    if mime.startswith(GOOGLE):
        return None
    return format_for_media_type(mime) or format_for_suffix(PurePosixPath(str(file.get("name") or "")).suffix)
