"""API key lifecycle: expiry, revocation and rotation with an overlap window, each with its error code;
per-key and per-tenant rate limits in Redis (429 with Retry-After) and the choice when Redis is down."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from knowledge.api.throttling import forget_redis_outage
from knowledge.models import ApiKey, Tenant
from knowledge.services.api_keys import api_key_rotate
from tests.api.conftest import assert_error, client_for, issue_key
from tests.api.test_outages import closed_port
from tests.factories import UserFactory

SEARCH = {"query": "anything"}


def search(client: APIClient) -> Any:
    return client.post("/api/v1/search", SEARCH, format="json")


def the_key() -> ApiKey:
    return ApiKey.objects.get()


def test_a_new_key_expires_after_the_default_lifetime(tenant: Tenant, settings: Any) -> None:
    issue_key(tenant=tenant)
    lifetime = the_key().expires_at - timezone.now()  # type: ignore[operator]
    assert timedelta(days=364) < lifetime <= timedelta(days=365)
    settings.KNOWLEDGE_API_KEY_DAYS = 0
    ApiKey.objects.all().delete()
    issue_key(tenant=tenant)
    assert the_key().expires_at is None


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"expires_at": timedelta(seconds=-1)}, "key_expired"),
        ({"revoked_at": timedelta(0)}, "key_revoked"),
    ],
)
def test_an_expired_or_revoked_key_is_a_401_with_its_code(
    tenant: Tenant, change: dict[str, timedelta], code: str
) -> None:
    client = client_for(issue_key(tenant=tenant))
    assert search(client).status_code == 200
    ApiKey.objects.update(**{field: timezone.now() + delta for field, delta in change.items()})
    assert assert_error(search(client), 401)["error"] == code


def test_an_unknown_key_is_invalid_key(tenant: Tenant) -> None:
    assert assert_error(search(client_for("kb_abcdef123456_nope")), 401)["error"] == "invalid_key"


def test_a_rotated_key_answers_to_both_secrets_until_the_overlap_ends(tenant: Tenant) -> None:
    old = issue_key(tenant=tenant)
    new = api_key_rotate(key_id=the_key().pk, overlap=timedelta(hours=1))
    assert new != old and new.split("_")[1] == old.split("_")[1]  # the same lookup id
    assert search(client_for(old)).status_code == 200 and search(client_for(new)).status_code == 200
    ApiKey.objects.update(previous_valid_until=timezone.now() - timedelta(seconds=1))
    assert assert_error(search(client_for(old)), 401)["error"] == "invalid_key"
    assert search(client_for(new)).status_code == 200
    third = api_key_rotate(key_id=the_key().pk, overlap=timedelta(0))  # no overlap: the old one stops
    assert search(client_for(new)).status_code == 401 and search(client_for(third)).status_code == 200


def test_rotation_by_command_prints_the_new_key_once(tenant: Tenant) -> None:
    old = issue_key(tenant=tenant)
    out = StringIO()
    call_command("rotate_api_key", "--key", old.rsplit("_", 1)[0], "--overlap-hours", "2", stdout=out)
    new = out.getvalue().strip()
    assert search(client_for(new)).status_code == 200 and search(client_for(old)).status_code == 200
    window = the_key().previous_valid_until - timezone.now()  # type: ignore[operator]
    assert timedelta(hours=1, minutes=59) < window <= timedelta(hours=2)
    with pytest.raises(CommandError, match="no API key"):
        call_command("rotate_api_key", "--key", "kb_000000000000", stdout=StringIO())
    ApiKey.objects.update(revoked_at=timezone.now())
    with pytest.raises(CommandError, match="is revoked"):
        call_command("rotate_api_key", "--key", old, stdout=StringIO())


def test_the_admin_rotates_and_revokes_only_with_the_change_permission(
    tenant: Tenant, client: Client
) -> None:
    issue_key(tenant=tenant)
    key = the_key()
    viewer = UserFactory.create(is_superuser=False)
    viewer.user_permissions.add(Permission.objects.get(codename="view_apikey"))
    client.force_login(viewer)
    form = {"action": "rotate", "_selected_action": [key.pk]}
    client.post("/admin/knowledge/apikey/", form)
    assert the_key().key_hash == key.key_hash  # a viewer's action does not run
    viewer.user_permissions.add(Permission.objects.get(codename="change_apikey"))
    response = client.post("/admin/knowledge/apikey/", form, follow=True)
    shown = [str(m) for m in response.context["messages"]]
    assert the_key().key_hash != key.key_hash and any("new secret" in m for m in shown)
    plain = next(m for m in shown if "new secret" in m).rsplit(" ", 1)[1]
    assert search(client_for(plain)).status_code == 200
    client.post("/admin/knowledge/apikey/", {"action": "revoke", "_selected_action": [key.pk]})
    assert the_key().revoked_at is not None


@pytest.fixture
def limits(settings: Any) -> Iterator[Any]:
    """Rate limits counted in the suite's Redis, under a prefix of this test's own."""
    settings.KNOWLEDGE_RATE_LIMIT_PREFIX = f"test-rate-{uuid.uuid4().hex}"
    forget_redis_outage()
    yield settings
    forget_redis_outage()


def test_a_key_over_its_limit_gets_429_with_retry_after_and_other_keys_do_not(
    tenant: Tenant, limits: Any
) -> None:
    busy = client_for(issue_key(tenant=tenant))
    ApiKey.objects.update(rate_limit_per_minute=3)
    calm = client_for(issue_key(tenant=tenant))
    assert [search(busy).status_code for _ in range(3)] == [200, 200, 200]
    refused = search(busy)
    assert assert_error(refused, 429)["error"] == "throttled"
    assert 0 < int(refused["Retry-After"]) <= 60
    assert search(calm).status_code == 200  # its own limit (the suite's default: none)


def test_a_tenants_keys_share_its_limit(tenant: Tenant, limits: Any) -> None:
    Tenant.objects.filter(pk=tenant.pk).update(rate_limit_per_minute=4)
    first, second = client_for(issue_key(tenant=tenant)), client_for(issue_key(tenant=tenant))
    codes = [search(client).status_code for client in (first, second, first, second, first)]
    assert codes == [200, 200, 200, 200, 429]


def test_the_default_limit_applies_to_a_key_without_its_own(tenant: Tenant, limits: Any) -> None:
    limits.KNOWLEDGE_API_KEY_RATE_LIMIT = 2
    client = client_for(issue_key(tenant=tenant))
    assert [search(client).status_code for _ in range(3)] == [200, 200, 429]
    ApiKey.objects.update(rate_limit_per_minute=0)  # 0: unlimited, whatever the default
    assert search(client).status_code == 200


@pytest.mark.parametrize(("choice", "status"), [("open", 200), ("closed", 503)])
def test_with_redis_down_the_limits_fail_as_configured(
    tenant: Tenant, limits: Any, choice: str, status: int
) -> None:
    limits.REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    limits.KNOWLEDGE_RATE_LIMIT_ON_REDIS_DOWN = choice
    client = client_for(issue_key(tenant=tenant))
    ApiKey.objects.update(rate_limit_per_minute=1)
    responses = [search(client) for _ in range(3)]  # the second would be over the limit
    assert [r.status_code for r in responses] == [status] * 3
    if status == 503:
        assert responses[0]["Retry-After"] and assert_error(responses[0], 503)


def test_the_schema_documents_401_403_and_429(tenant: Tenant) -> None:
    schema = APIClient().get("/api/schema/?format=json").json()
    responses = schema["paths"]["/api/v1/search"]["post"]["responses"]
    assert {"401", "403", "429"} <= set(responses)
