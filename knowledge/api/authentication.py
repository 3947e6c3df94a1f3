"""Bearer API-key authentication: the key decides the tenant and what the caller may do."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from knowledge.models import ApiKey
from knowledge.store.api_keys import api_key_by_lookup_id

LAST_USED_RESOLUTION = timedelta(minutes=1)
LOOKUP_ID_MAX = ApiKey._meta.get_field("lookup_id").max_length or 16


def _could_be_lookup_id(text: str) -> bool:
    """Keys name their row by a short ASCII id; anything else (a NUL, say, which PostgreSQL cannot
    even be asked about) matches no key and needs no query."""
    return 0 < len(text) <= LOOKUP_ID_MAX and text.isascii() and text.isalnum()


class KeyRevoked(exceptions.AuthenticationFailed):
    default_detail = "This API key has been revoked."
    default_code = "key_revoked"


class KeyExpired(exceptions.AuthenticationFailed):
    default_detail = "This API key has expired; ask an administrator for a new one."
    default_code = "key_expired"


class InvalidKey(exceptions.AuthenticationFailed):
    default_detail = "Invalid API key."
    default_code = "invalid_key"


@dataclass(frozen=True)
class ApiClient:
    """The authenticated caller (DRF's request.user)."""

    key: ApiKey

    is_authenticated = True

    @property
    def tenant_id(self) -> int:
        return self.key.tenant_id


def request_key(request: Any) -> ApiKey:
    """The API key a request was authenticated with (views behind IsAuthenticated only)."""
    assert isinstance(request.user, ApiClient)
    return request.user.key


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ApiClient, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, plain = header.partition(" ")
        if scheme.lower() != self.keyword.lower() or not plain.strip():  # RFC 9110: case-insensitive
            raise exceptions.AuthenticationFailed("Use the header 'Authorization: Bearer <api key>'.")
        now = timezone.now()
        key = self._lookup(plain.strip(), now)
        # A write per request would serialise concurrent requests of one key on its row: the time of
        # use is only refreshed once it is LAST_USED_RESOLUTION old.
        if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        return ApiClient(key), key

    def _lookup(self, plain: str, now: datetime) -> ApiKey:
        parts = plain.split("_", 2)
        if len(parts) != 3 or not _could_be_lookup_id(parts[1]):
            raise InvalidKey()
        key = api_key_by_lookup_id(parts[1])
        if key is None or not key.matches(plain, now=now):
            raise InvalidKey()
        if key.revoked_at is not None:
            raise KeyRevoked()
        if key.is_expired(now):
            raise KeyExpired()
        return key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class ApiKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "knowledge.api.authentication.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key from `manage.py create_api_key`.",
        }
