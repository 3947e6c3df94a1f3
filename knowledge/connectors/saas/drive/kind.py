"""The Google Drive kind's config, and a sync: the first (or a full) sync lists every file in scope
and stores the changes feed's start page token; later syncs read only the changes since that token
(a removed or trashed file is pruned, a changed one fetched again, every other file kept)."""

from __future__ import annotations

from typing import Any

from knowledge.connectors.base import ConnectorKind
from knowledge.connectors.extract.sandbox import Sandbox
from knowledge.connectors.saas.client import ApiClient, ApiError
from knowledge.connectors.saas.common import DEFAULT_MAX_PAGES, check_keys, check_positive, check_url
from knowledge.connectors.saas.drive.access import LINK_POLICIES, DriveAccess
from knowledge.connectors.saas.drive.api import ALL_DRIVES, DEFAULT_API_URL, DriveApi
from knowledge.connectors.saas.drive.auth import BadServiceAccount, ServiceAccount, TokenSource
from knowledge.connectors.saas.drive.content import (
    FILE_FIELDS,
    FOLDER,
    DriveContent,
    Scope,
    external_id,
)
from knowledge.connectors.types import Listing, SourceAcl, SourceError, SourceState

DEFAULT_MAX_FILE_BYTES = 20_000_000


def _ids(value: object) -> str | None:
    if not isinstance(value, list) or not all(isinstance(i, str) and i for i in value):
        return 'must be a list of folder ids, e.g. ["1AbCdEf"]'
    return None


def _domain(value: object) -> str | None:
    if not isinstance(value, str) or "." not in value or "/" in value or "@" in value:
        return "must be the Workspace's primary domain, e.g. acme.com"
    return None


def _text(value: object) -> str | None:
    return None if isinstance(value, str) and value else "must be a non-empty string"


CHECKS = {
    "subject": lambda v: None if isinstance(v, str) and "@" in v else "must be a user's e-mail address",
    "shared_drive": _text,
    "folders": _ids,
    "anyone_with_link": lambda v: None if v in LINK_POLICIES else f"must be one of {list(LINK_POLICIES)}",
    "api_url": check_url,
    "max_file_bytes": check_positive,
    "max_pages": check_positive,
}


class DriveKind(ConnectorKind):
    name = "google_drive"
    label = "Google Drive"
    config_keys = frozenset({"domain", *CHECKS})
    credential_label = "Service-account JSON key (with domain-wide delegation to the subject)"
    syncs_permissions = True

    def check(self, config: dict[str, Any]) -> dict[str, str]:
        problem = _domain(config.get("domain"))
        if problem:
            return {"config": f"domain: required: {problem}"}
        return check_keys(config, CHECKS)

    def list_source(
        self, config: dict[str, Any], state: SourceState | None = None, *, credential: str = ""
    ) -> Listing:
        listing = Listing()
        with Sandbox() as sandbox, _client(config) as client:
            api = _open(client, config, credential, listing, state)
            if api is None:
                return listing
            access = DriveAccess(api, str(config["domain"]), _link_policy(config), listing)
            max_bytes = int(config.get("max_file_bytes", DEFAULT_MAX_FILE_BYTES))
            content = DriveContent(api, access, sandbox, state, max_bytes=max_bytes)
            sync = _Sync(api, config, Scope(api, list(config.get("folders") or [])), listing)
            cursor = state.cursor() if state is not None else ""
            try:
                if not (cursor and sync.changes(cursor, content, state)):
                    sync.everything(content)
            except (ApiError, KeyError, TypeError) as exc:
                _unlisted(listing, state, f"the files could not be listed in full ({exc}){_hint(exc)}")
        return listing

    def list_permissions(
        self, config: dict[str, Any], state: SourceState, *, credential: str = ""
    ) -> Listing:
        listing = Listing()
        with _client(config) as client:
            api = _open(client, config, credential, listing, state)
            if api is None:
                return listing
            access = DriveAccess(api, str(config["domain"]), _link_policy(config), listing)
            sync = _Sync(api, config, Scope(api, list(config.get("folders") or [])), listing)
            wanted = state.external_ids()
            try:
                files = {external_id(str(f["id"])): f for f in sync.files() if not _skipped(f)}
            except (ApiError, KeyError, TypeError) as exc:
                listing.fail_unreadable(f"permissions could not be read ({exc}){_hint(exc)}", state)
                return listing
            for eid in sorted(wanted):
                if eid not in files:
                    listing.make_private(eid, "the file is gone or out of reach: private until the next sync")
                    continue
                try:
                    listing.acls[eid] = access.file_acl(files[eid])
                except Exception as exc:  # noqa: BLE001 (any doubt about who may read it: private)
                    listing.make_private(eid, str(exc))
                    listing.acls[eid] = SourceAcl()
        return listing


class _Sync:
    """The two ways of listing: every file in scope, or the changes since a page token."""

    def __init__(self, api: DriveApi, config: dict[str, Any], scope: Scope, listing: Listing) -> None:
        self.api, self.scope, self.listing = api, scope, listing
        drive = str(config.get("shared_drive") or "")
        self.corpus: dict[str, Any] = (
            {"corpora": "drive", "driveId": drive, "includeItemsFromAllDrives": "true", **ALL_DRIVES}
            if drive
            else {"corpora": "user", "includeItemsFromAllDrives": "true", **ALL_DRIVES}
        )
        self.drive = drive

    def files(self) -> list[dict[str, Any]]:
        """Every file in scope (folders are read too, to follow parents, but not returned)."""
        found = list(
            self.api.items(
                "drive/v3/files",
                "files",
                q="trashed = false",
                fields=f"nextPageToken,files({FILE_FIELDS})",
                pageSize=1000,
                **self.corpus,
            )
        )
        for file in found:
            if file.get("mimeType") == FOLDER:
                self.scope.learn(file)
        return [f for f in found if f.get("mimeType") != FOLDER and self.scope.contains(f)]

    def everything(self, content: DriveContent) -> None:
        start = self._start_token()  # taken first: a change made while listing is read next time
        for file in self.files():
            content.file(file, self.listing)
        self.listing.cursor = start

    def changes(self, cursor: str, content: DriveContent, state: SourceState | None) -> bool:
        """The changes since `cursor`; False (list everything instead) when the token is refused."""
        changed: dict[str, dict[str, Any] | None] = {}
        token, newest = cursor, ""
        params = {"driveId": self.drive} if self.drive else {}
        for _ in range(self.api.max_pages):
            try:
                body = self.api.get(
                    "drive/v3/changes",
                    pageToken=token,
                    fields=f"nextPageToken,newStartPageToken,changes(fileId,removed,file({FILE_FIELDS}))",
                    pageSize=1000,
                    includeItemsFromAllDrives="true",
                    **ALL_DRIVES,
                    **params,
                )
            except ApiError as exc:
                if exc.status in {400, 404, 410}:
                    self.listing.errors.append(
                        SourceError(f"the stored change token was refused ({exc}): listed in full")
                    )
                    return False
                raise
            for change in body.get("changes") or []:
                file = change.get("file")
                changed[str(change["fileId"])] = None if change.get("removed") else file
            token, newest = str(body.get("nextPageToken") or ""), str(body.get("newStartPageToken") or "")
            if not token:
                break
        else:
            raise ApiError(f"drive/v3/changes: more than {self.api.max_pages} pages")
        self._apply(changed, content, state)
        self.listing.cursor = newest or cursor
        return True

    def _apply(
        self, changed: dict[str, dict[str, Any] | None], content: DriveContent, state: SourceState | None
    ) -> None:
        for file in changed.values():
            if file is not None and file.get("mimeType") == FOLDER:
                self.scope.learn(file)
        touched = {external_id(i) for i in changed}
        stored = state.external_ids() if state is not None else set()
        self.listing.kept.update(stored - touched)  # unchanged since the token: as they are
        for file in changed.values():
            if file is None or _skipped(file) or not self.scope.contains(file):
                continue  # removed, trashed, a folder, or moved out of scope: pruned if stored
            content.file(file, self.listing)

    def _start_token(self) -> str:
        params = {"driveId": self.drive} if self.drive else {}
        return str(self.api.get("drive/v3/changes/startPageToken", **ALL_DRIVES, **params)["startPageToken"])


def _skipped(file: dict[str, Any]) -> bool:
    return bool(file.get("trashed")) or file.get("mimeType") == FOLDER


def _client(config: dict[str, Any]) -> ApiClient:
    return ApiClient(str(config.get("api_url") or DEFAULT_API_URL), headers={"Accept": "application/json"})


def _open(
    client: ApiClient,
    config: dict[str, Any],
    credential: str,
    listing: Listing,
    state: SourceState | None,
) -> DriveApi | None:
    """The API with a first token fetched; None (everything stored made private) when it cannot be."""
    try:
        tokens = TokenSource(ServiceAccount.parse(credential), str(config.get("subject") or ""))
        tokens.token()
    except (BadServiceAccount, ApiError) as exc:
        listing.fail_unreadable(f"could not sign in to Google ({exc}){_hint(exc)}", state)
        return None
    return DriveApi(client, tokens, int(config.get("max_pages", DEFAULT_MAX_PAGES)))


def _link_policy(config: dict[str, Any]) -> str:
    return str(config.get("anyone_with_link") or "ignore")


def _unlisted(listing: Listing, state: SourceState | None, message: str) -> None:
    """The listing stopped part way: nothing is pruned, and the stored cursor stays where it was."""
    listing.fail_listing(message)
    listing.cursor = None
    if state is not None:
        listing.kept.update(state.external_ids() - {d.external_id for d in listing.documents})


def _hint(exc: Exception) -> str:
    if isinstance(exc, BadServiceAccount):
        return ""
    if isinstance(exc, ApiError) and (exc.denied or exc.status == 400):
        return " (check the service-account key, its domain-wide delegation, and the subject)"
    return ""
