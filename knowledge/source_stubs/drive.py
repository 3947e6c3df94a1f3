"""A Google stub: the OAuth token endpoint (a JWT bearer grant whose RS256 signature is verified against
the service account's public key), Drive v3 files / permissions / export / media / changes, and the
Admin Directory's group members and users, each `nextPageToken`-paged `page_size` items at a time."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from urllib.parse import unquote

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from knowledge.source_stubs.server import Reply, Request, StubServer

FOLDER = "application/vnd.google-apps.folder"
DOC = "application/vnd.google-apps.document"
CLIENT_EMAIL = "kb-reader@acme-project.iam.gserviceaccount.com"
SUBJECT = "admin@acme.com"


@cache
def private_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def service_account_key(token_uri: str, key: rsa.RSAPrivateKey | None = None) -> str:
    """A service account's JSON key (signed with `key`: another key than the stub knows is a forgery)."""
    pem = (key or private_key()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return json.dumps(
        {
            "type": "service_account",
            "client_email": CLIENT_EMAIL,
            "private_key": pem.decode(),
            "token_uri": token_uri,
        }
    )


def user(email: str, role: str = "reader") -> dict[str, Any]:
    return {"type": "user", "role": role, "emailAddress": email}


def group(email: str) -> dict[str, Any]:
    return {"type": "group", "role": "reader", "emailAddress": email}


def domain(name: str) -> dict[str, Any]:
    return {"type": "domain", "role": "reader", "domain": name}


def anyone() -> dict[str, Any]:
    return {"type": "anyone", "role": "reader", "allowFileDiscovery": False}


@dataclass
class DriveFile:
    name: str
    mime: str
    content: bytes = b""
    parents: list[str] = field(default_factory=list)
    permissions: list[dict[str, Any]] = field(default_factory=list)
    version: int = 1
    inline_permissions: bool = True  # False: as in a shared drive, only permissions.list has them


@dataclass
class DriveWorld:
    files: dict[str, DriveFile] = field(default_factory=dict)
    groups: dict[str, list[str]] = field(default_factory=dict)  # group e-mail -> member e-mails
    users: list[str] = field(default_factory=list)  # the domain's users
    changes: list[tuple[str, bool]] = field(default_factory=list)  # (file id, removed)
    page_size: int = 2
    tokens_issued: int = 0
    subjects: list[str] = field(default_factory=list)

    def stub(self) -> StubServer:
        return StubServer(answer=self.answer)

    # --- what happens in Drive ------------------------------------------------------------------------
    def touch(self, file_id: str, **changes: Any) -> None:
        file = self.files[file_id]
        for key, value in changes.items():
            setattr(file, key, value)
        file.version += 1
        self.changes.append((file_id, False))

    def remove(self, file_id: str) -> None:
        del self.files[file_id]
        self.changes.append((file_id, True))

    # --- dispatch -------------------------------------------------------------------------------------
    def answer(self, request: Request) -> Reply:
        path = unquote(request.path)
        if path == "/token":
            return self.token(request)
        if not request.headers.get("authorization", "").startswith("Bearer ya29.stub-"):
            return Reply(401, {"error": {"code": 401, "message": "Request had invalid credentials."}})
        parts = path.strip("/").split("/")
        if parts[:2] == ["drive", "v3"]:
            return self.drive(parts[2:], request.query)
        if parts[:3] == ["admin", "directory", "v1"]:
            return self.directory(parts[3:], request.query)
        return Reply(404, {"error": {"code": 404, "message": "Not Found"}})

    def token(self, request: Request) -> Reply:
        if request.query.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return Reply(400, {"error": "unsupported_grant_type"})
        try:
            claims = verified_claims(request.query.get("assertion", ""))
        except ValueError as exc:
            return Reply(400, {"error": "invalid_grant", "error_description": str(exc)})
        if claims.get("iss") != CLIENT_EMAIL or not str(claims.get("aud", "")).endswith("/token"):
            return Reply(400, {"error": "invalid_grant", "error_description": "bad iss or aud"})
        self.tokens_issued += 1
        self.subjects.append(str(claims.get("sub", "")))
        return Reply(body={"access_token": f"ya29.stub-{self.tokens_issued}", "expires_in": 3599})

    def paged(self, key: str, items: list[Any], query: dict[str, str], **extra: Any) -> Reply:
        start = int(query.get("pageToken") or 0)
        end = start + self.page_size
        body: dict[str, Any] = {key: items[start:end], **extra}
        if end < len(items):
            body["nextPageToken"] = str(end)
        return Reply(body=body)

    def resource(self, file_id: str, *, inline: bool = True) -> dict[str, Any]:
        file = self.files[file_id]
        body: dict[str, Any] = {
            "id": file_id,
            "name": file.name,
            "mimeType": file.mime,
            "version": str(file.version),
            "parents": file.parents,
            "webViewLink": f"https://drive.example/file/d/{file_id}/view",
            "size": str(len(file.content)),
            "trashed": False,
        }
        if inline and file.inline_permissions:
            body["permissions"] = file.permissions
        return body

    def drive(self, parts: list[str], query: dict[str, str]) -> Reply:
        if parts == ["files"]:
            return self.paged("files", [self.resource(i) for i in self.files], query)
        if parts == ["changes", "startPageToken"]:
            return Reply(body={"startPageToken": str(len(self.changes))})
        if parts == ["changes"]:
            return self.changed(query)
        if parts == ["files", "root"]:
            return Reply(body={"id": "0AROOT", "name": "My Drive", "mimeType": FOLDER})
        if len(parts) >= 2 and parts[0] == "files" and parts[1] not in self.files:
            return Reply(404, {"error": {"code": 404, "message": f"File not found: {parts[1]}."}})
        file_id = parts[1] if len(parts) >= 2 else ""
        if parts == ["files", file_id] and query.get("alt") == "media":
            return Reply(raw=self.files[file_id].content)
        if parts == ["files", file_id]:
            return Reply(body=self.resource(file_id))
        if parts == ["files", file_id, "export"]:
            return Reply(raw=self.files[file_id].content)
        if parts == ["files", file_id, "permissions"]:
            return self.paged("permissions", self.files[file_id].permissions, query)
        return Reply(404, {"error": {"code": 404, "message": "Not Found"}})

    def changed(self, query: dict[str, str]) -> Reply:
        token = query.get("pageToken", "")
        if not token.isdigit() or int(token) > len(self.changes):
            return Reply(400, {"error": {"code": 400, "message": "Invalid Value: pageToken"}})
        start, end = int(token), int(token) + self.page_size
        items = [
            {"fileId": i, "removed": True}
            if removed or i not in self.files
            else {"fileId": i, "removed": False, "file": self.resource(i)}
            for i, removed in self.changes[start:end]
        ]
        body: dict[str, Any] = {"changes": items}
        if end < len(self.changes):
            body["nextPageToken"] = str(end)
        else:
            body["newStartPageToken"] = str(len(self.changes))
        return Reply(body=body)

    def directory(self, parts: list[str], query: dict[str, str]) -> Reply:
        if len(parts) == 3 and parts[0] == "groups" and parts[2] == "members":
            members = self.groups.get(parts[1])
            if members is None:
                return Reply(404, {"error": {"code": 404, "message": "Resource Not Found: groupKey"}})
            items = [{"email": m, "type": "USER", "status": "ACTIVE", "role": "MEMBER"} for m in members]
            return self.paged("members", items, query)
        if parts == ["users"]:
            wanted = query.get("domain", "")
            items = [{"primaryEmail": u} for u in self.users if u.endswith("@" + wanted)]
            return self.paged("users", items, query)
        return Reply(404, {"error": {"code": 404, "message": "Not Found"}})


def verified_claims(jwt: str) -> dict[str, Any]:
    """The claims of an RS256 JWT signed by `private_key()`; ValueError when it is not one."""
    try:
        header, claims, signature = jwt.split(".")
        private_key().public_key().verify(
            _unb64(signature), f"{header}.{claims}".encode(), padding.PKCS1v15(), hashes.SHA256()
        )
    except Exception as exc:  # noqa: BLE001 (any malformed or forged assertion)
        raise ValueError(f"the assertion does not verify ({type(exc).__name__})") from exc
    if json.loads(_unb64(header)).get("alg") != "RS256":
        raise ValueError("not RS256")
    decoded: dict[str, Any] = json.loads(_unb64(claims))
    return decoded


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
