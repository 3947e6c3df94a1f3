"""A Google service account's access token: a JWT signed RS256 with the account's private key (the
OAuth 2.0 JWT bearer grant, RFC 7523), exchanged at the account's token endpoint and renewed a minute
before it expires. With `subject`, the account acts as that Workspace user (domain-wide delegation)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from knowledge.connectors.saas.client import ApiClient, ApiError

SCOPES = (
    "https://www.googleapis.com/auth/drive.readonly",
    "https://www.googleapis.com/auth/admin.directory.group.member.readonly",
    "https://www.googleapis.com/auth/admin.directory.user.readonly",
)
GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
DEFAULT_TOKEN_URI = "https://oauth2.googleapis.com/token"
LIFETIME_SECONDS = 3600


class BadServiceAccount(ValueError):
    """The credential is not a usable service-account key (JSON with client_email and private_key)."""


@dataclass(frozen=True)
class ServiceAccount:
    email: str
    private_key: rsa.RSAPrivateKey
    token_uri: str

    @classmethod
    def parse(cls, credential: str) -> ServiceAccount:
        try:
            data = json.loads(credential)
        except ValueError as exc:
            raise BadServiceAccount("the credential is not a service-account JSON key") from exc
        if not isinstance(data, dict) or not data.get("client_email") or not data.get("private_key"):
            raise BadServiceAccount("the service-account key needs client_email and private_key")
        try:
            key = serialization.load_pem_private_key(str(data["private_key"]).encode(), password=None)
        except (TypeError, ValueError) as exc:
            raise BadServiceAccount(f"the service account's private_key is unreadable ({exc})") from exc
        if not isinstance(key, rsa.RSAPrivateKey):
            raise BadServiceAccount("the service account's private_key is not an RSA key")
        uri = str(data.get("token_uri") or DEFAULT_TOKEN_URI)
        return cls(email=str(data["client_email"]), private_key=key, token_uri=uri)


def assertion(account: ServiceAccount, *, subject: str, now: float) -> str:
    """The signed JWT the token endpoint exchanges for an access token."""
    claims: dict[str, Any] = {
        "iss": account.email,
        "scope": " ".join(SCOPES),
        "aud": account.token_uri,
        "iat": int(now),
        "exp": int(now) + LIFETIME_SECONDS,
    }
    if subject:
        claims["sub"] = subject
    signing_input = f"{_b64(json.dumps({'alg': 'RS256', 'typ': 'JWT'}))}.{_b64(json.dumps(claims))}"
    signature = account.private_key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{_b64(signature)}"


class TokenSource:
    """Access tokens for one account and subject, fetched when first needed and renewed near expiry."""

    def __init__(
        self, account: ServiceAccount, subject: str, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.account, self.subject, self.clock = account, subject, clock
        self._token, self._expires = "", 0.0

    def token(self) -> str:
        now = self.clock()
        if self._token and now < self._expires - 60:
            return self._token
        with ApiClient(self.account.token_uri, headers={"Accept": "application/json"}) as client:
            body = client.post(
                self.account.token_uri,
                {"grant_type": GRANT, "assertion": assertion(self.account, subject=self.subject, now=now)},
            ).body
        if not isinstance(body, dict) or not isinstance(body.get("access_token"), str):
            raise ApiError("the token endpoint answered without an access_token", status=401)
        self._token = body["access_token"]
        self._expires = now + float(body.get("expires_in") or LIFETIME_SECONDS)
        return self._token


def _b64(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
