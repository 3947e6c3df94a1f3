"""API keys: bearer authentication, scopes, identity powers, tenant binding and the create_api_key command."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from knowledge.models import ApiKey, Principal, Tenant
from knowledge.store.api_keys import api_key_by_lookup_id
from tests.api.conftest import ClientMaker, assert_error, client_for, issue_key, post
from tests.factories import PrincipalFactory, TenantFactory

SEARCH = {"query": "anything"}


def test_missing_key_is_401(tenant: Tenant) -> None:
    response = APIClient().post("/api/v1/search", SEARCH, format="json")
    assert_error(response, 401)
    assert response["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize(
    "header",
    [
        "Bearer kb_nope_nope",
        "Bearer not-a-key",
        "Basic dXNlcjpwdw==",
        "Bearer ",
        "Bearer",
        "Bearer kb_ab\x00cd_secret",  # a NUL was a 500: PostgreSQL refuses it in a query
        "Bearer kb_" + "a" * 5000 + "_secret",
        "Bearer kb__secret",
    ],
)
def test_invalid_key_is_401(tenant: Tenant, header: str) -> None:
    response = APIClient().post("/api/v1/search", SEARCH, format="json", HTTP_AUTHORIZATION=header)
    assert_error(response, 401)


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "Bearer"])
def test_the_scheme_is_case_insensitive(tenant: Tenant, scheme: str) -> None:
    header = f"{scheme} {issue_key(tenant=tenant)}"
    response = APIClient().post("/api/v1/search", SEARCH, format="json", HTTP_AUTHORIZATION=header)
    assert response.status_code == 200, response.content


def test_key_with_a_wrong_secret_is_401(tenant: Tenant) -> None:
    plain = issue_key(tenant=tenant)
    assert_error(client_for(plain[:-2] + "xx").post("/api/v1/search", SEARCH, format="json"), 401)


def test_revoked_key_is_401(tenant: Tenant) -> None:
    plain = issue_key(tenant=tenant)
    ApiKey.objects.update(revoked_at=timezone.now())
    body = assert_error(client_for(plain).post("/api/v1/search", SEARCH, format="json"), 401)
    assert "revoked" in body["message"]


def test_use_is_recorded(tenant: Tenant) -> None:
    client_for(issue_key(tenant=tenant)).post("/api/v1/search", SEARCH, format="json")
    assert ApiKey.objects.get().last_used_at is not None


def test_use_is_recorded_once_a_minute_not_on_every_request(tenant: Tenant) -> None:
    client = client_for(issue_key(tenant=tenant))
    client.post("/api/v1/search", SEARCH, format="json")
    first = ApiKey.objects.get().last_used_at
    client.post("/api/v1/search", SEARCH, format="json")
    assert ApiKey.objects.get().last_used_at == first  # no write for the second request
    ApiKey.objects.update(last_used_at=timezone.now() - timedelta(minutes=2))
    client.post("/api/v1/search", SEARCH, format="json")
    refreshed = ApiKey.objects.get().last_used_at
    assert refreshed is not None and refreshed > timezone.now() - timedelta(seconds=30)


@pytest.mark.parametrize(
    ("scopes", "method", "path"),
    [
        (("index",), "post", "/api/v1/search"),
        (("search",), "post", "/api/v1/index"),
        (("search",), "get", "/api/v1/documents"),
        (("search",), "get", "/api/v1/documents/x"),
        (("search",), "delete", "/api/v1/documents/x"),
    ],
)
def test_missing_scope_is_403(
    tenant: Tenant, make_client: ClientMaker, scopes: tuple[str, ...], method: str, path: str
) -> None:
    client = make_client(tenant, scopes=scopes)
    response = getattr(client, method)(path, {"id": "x", "content": "y"} if method == "post" else None)
    body = assert_error(response, 403)
    assert "scope" in body["message"]


def test_on_behalf_of_needs_the_permission(api: APIClient) -> None:
    response = post(api, "search", {**SEARCH, "on_behalf_of": "erin@example.com"})
    assert_error(response, 403, "on_behalf_of")


def test_bypass_needs_the_permission(api: APIClient) -> None:
    assert_error(post(api, "search", {**SEARCH, "bypass_acl": True}), 403, "bypass_acl")


def test_permitted_key_may_name_a_user_and_bypass(admin_api: APIClient) -> None:
    body = {**SEARCH, "on_behalf_of": "erin@example.com", "bypass_acl": True}
    assert post(admin_api, "search", body).status_code == 200


def test_another_source_account_is_403(api: APIClient) -> None:
    TenantFactory.create(slug="globex")
    search = post(api, "search", {**SEARCH, "source_account_id": "globex"})
    assert_error(search, 403, "source_account_id")
    index = post(api, "index", {"id": "a", "content": "b", "source_account_id": "globex"})
    assert_error(index, 403, "source_account_id")


def test_own_source_account_is_accepted(api: APIClient) -> None:
    body = {"id": "a", "content": "b", "source_account_id": "acme"}
    assert post(api, "index", body).status_code == 201
    assert post(api, "search", {**SEARCH, "source_account_id": "acme"}).status_code == 200


def test_create_api_key_prints_a_working_key_and_stores_only_its_hash(tenant: Tenant) -> None:
    out = StringIO()
    call_command(
        "create_api_key",
        *("--tenant", "acme", "--scopes", "search,index", "--principal", " Erin@Example.com"),
        *("--create-principal", "--on-behalf-of", "--bypass-acl"),
        stdout=out,
    )
    plain = out.getvalue().strip()
    key = ApiKey.objects.get()
    assert key.key_hash == hashlib.sha256(plain.encode()).hexdigest()
    stored = " ".join(str(v) for v in ApiKey.objects.values().get().values())
    secret = plain.split("_", 2)[2]  # kb_<lookup id>_<secret>; the secret may itself contain "_"
    assert len(secret) >= 40 and plain not in stored and secret not in stored
    assert sorted(key.scopes) == ["index", "search"] and key.on_behalf_of and key.bypass_acl
    assert key.principal is not None and key.principal.external_id == "erin@example.com"
    client = client_for(plain)
    assert post(client, "index", {"id": "a", "content": "hello"}).status_code == 201
    assert post(client, "search", {"query": "hello", "bypass_acl": True}).status_code == 200


def test_create_api_key_defaults_to_search_only(tenant: Tenant) -> None:
    out = StringIO()
    call_command("create_api_key", "--tenant", "acme", stdout=out)
    client = client_for(out.getvalue().strip())
    assert post(client, "search", SEARCH).status_code == 200
    assert_error(post(client, "index", {"id": "a", "content": "b"}), 403)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--tenant", "nope"), "unknown tenant 'nope'"),
        (("--tenant", "acme", "--scopes", "search,admin"), "scopes must be among"),
        (("--tenant", "acme", "--principal", "hr"), "must be a user's e-mail address"),
        (("--tenant", "acme", "--principal", "new@example.com"), "pass --create-principal to create it"),
        (("--tenant", "acme", "--create-principal"), "--create-principal needs --principal"),
    ],
)
def test_create_api_key_refuses_bad_arguments(tenant: Tenant, args: tuple[str, ...], message: str) -> None:
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("create_api_key", *args, stdout=StringIO())
    assert not ApiKey.objects.exists() and not Principal.objects.exists()


def test_create_api_key_names_an_existing_user_in_any_spelling(tenant: Tenant) -> None:
    erin = Principal.objects.create(tenant=tenant, kind="user", external_id="erin@example.com")
    call_command("create_api_key", "--tenant", "acme", "--principal", "ERIN@example.com ", stdout=StringIO())
    assert ApiKey.objects.get().principal == erin and Principal.objects.count() == 1


def model_values(instance: object) -> dict[str, object]:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}  # type: ignore[attr-defined]


@pytest.mark.parametrize("with_principal", [False, True], ids=["tenant-key", "user-key"])
def test_the_key_lookup_reads_what_the_orm_reads(
    tenant: Tenant, with_principal: bool, django_assert_num_queries: Any
) -> None:
    principal = PrincipalFactory.create(tenant=tenant, kind="user") if with_principal else None
    key, _ = ApiKey.issue(tenant=tenant, name="k", scopes=["search"], principal=principal)
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now(), revoked_at=timezone.now())
    orm = ApiKey.objects.select_related("tenant", "principal").get(pk=key.pk)
    with django_assert_num_queries(1):  # the key, its tenant and principal: nothing loaded later
        found = api_key_by_lookup_id(key.lookup_id)
        assert found is not None
        assert model_values(found) == model_values(orm)
        assert model_values(found.tenant) == model_values(orm.tenant)
        assert (found.principal and model_values(found.principal)) == (
            orm.principal and model_values(orm.principal)
        )
    assert found.pk == key.pk and not found._state.adding
    assert api_key_by_lookup_id("nosuchkey") is None
