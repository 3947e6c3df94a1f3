"""API fixtures: tenants, API keys with chosen powers, and authenticated clients."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from knowledge.models import ApiKey, Principal, Tenant
from tests.factories import TenantFactory

KeyMaker = Callable[..., str]
ClientMaker = Callable[..., APIClient]


def bearer(plain: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {plain}"}


def issue_key(
    *,
    tenant: Tenant,
    scopes: tuple[str, ...] = ("search", "index"),
    principal: Principal | None = None,
    on_behalf_of: bool = False,
    bypass_acl: bool = False,
) -> str:
    """A fresh key's plain text (only its hash is stored)."""
    _, plain = ApiKey.issue(
        tenant=tenant,
        name="test",
        scopes=list(scopes),
        principal=principal,
        on_behalf_of=on_behalf_of,
        bypass_acl=bypass_acl,
    )
    return plain


def client_for(plain: str) -> APIClient:
    client = APIClient()
    client.credentials(**bearer(plain))
    return client


@pytest.fixture
def tenant(db: None) -> Tenant:
    return TenantFactory.create(slug="acme")


@pytest.fixture
def make_client(db: None) -> ClientMaker:
    """`make_client(tenant, **key_options)` → a client authenticated with a new key."""

    def make(tenant: Tenant, **options: Any) -> APIClient:
        return client_for(issue_key(tenant=tenant, **options))

    return make


@pytest.fixture
def api(tenant: Tenant, make_client: ClientMaker) -> APIClient:
    """A client whose key may search and index, with public-only identity and no special powers."""
    return make_client(tenant)


@pytest.fixture
def admin_api(tenant: Tenant, make_client: ClientMaker) -> APIClient:
    """A client whose key may search on behalf of users and bypass ACLs."""
    return make_client(tenant, on_behalf_of=True, bypass_acl=True)


def assert_error(response: Any, status: int, field: str | None = None) -> dict[str, Any]:
    """A JSON error body with a code and a message, naming `field` when given; never a traceback."""
    assert response.status_code == status, response.content
    body: dict[str, Any] = response.json()
    assert isinstance(body["error"], str) and body["message"]
    assert "Traceback" not in response.content.decode()
    if field is not None:
        assert field in body["fields"], body
        assert all(isinstance(m, str) for m in body["fields"][field])
    return body


def post(client: APIClient, path: str, body: Any) -> Any:
    """POST a JSON body to /api/v1/<path>."""
    return client.post(f"/api/v1/{path}", body, format="json")


def post_raw(client: APIClient, path: str, raw: str) -> Any:
    """POST raw text as application/json (malformed JSON, NaN literals...)."""
    return client.post(f"/api/v1/{path}", data=raw, content_type="application/json")
