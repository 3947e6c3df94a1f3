"""One canonical spelling per principal (knowledge/names.py) on every write path and in every look-up,
and the migration that merges spellings that already exist as separate principals."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from rest_framework.test import APIClient

from knowledge import names
from knowledge.access.principals import principals_resolve
from knowledge.connectors.types import SourceAcl
from knowledge.models import ApiKey, Chunk, Document, Principal, Tenant
from knowledge.selectors.identity import principal_tokens
from tests.api.conftest import client_for, issue_key, post
from tests.factories import TenantFactory


@pytest.mark.parametrize(
    ("kind", "given", "canonical"),
    [
        ("user", "  Erin@Example.COM ", "erin@example.com"),
        ("user", "ｅｒｉｎ@example.com", "erin@example.com"),  # full-width letters (NFKC)
        ("user", "STRASSE@example.com", "strasse@example.com"),
        ("group", " HR  Team\t", "HR Team"),  # case kept, whitespace made one space
        ("group", "ＨＲ", "HR"),
    ],
)
def test_the_canonical_forms(kind: str, given: str, canonical: str) -> None:
    assert names.principal_name(kind, given) == canonical


def test_source_acls_hold_canonical_names_and_drop_blank_ones() -> None:
    acl = SourceAcl.of(users=["Erin@Example.com", "erin@example.com "], groups=["hr ", "hr", "  "])
    assert acl == SourceAcl.of(users=["erin@example.com"], groups=["hr"])


@pytest.mark.django_db
def test_every_spelling_resolves_to_one_principal_created_once() -> None:
    tenant = TenantFactory.create()
    ids = principals_resolve(
        tenant=tenant, keys=[("user", "Erin@Example.com"), ("user", " erin@example.com"), ("group", "hr ")]
    )
    assert ids[("user", "Erin@Example.com")] == ids[("user", " erin@example.com")]
    assert list(Principal.objects.values_list("kind", "external_id")) == [
        ("group", "hr"),
        ("user", "erin@example.com"),
    ]
    saved = Principal.objects.create(tenant=tenant, kind="user", external_id=" Sam@Example.com")
    assert saved.external_id == "sam@example.com"


@pytest.mark.django_db
def test_an_api_grant_and_a_search_in_different_spellings_meet(tenant_api: tuple[Tenant, APIClient]) -> None:
    tenant, api = tenant_api
    post(api, "index", {"id": "memo", "content": "harbour ferry", "acl": {"users": ["Erin@Example.com"]}})
    post(api, "index", {"id": "hr", "content": "harbour ferry", "acl": {"groups": ["hr "]}})
    erin = Principal.objects.get(tenant=tenant, kind="user")
    erin.groups.add(Principal.objects.get(tenant=tenant, kind="group", external_id="hr"))
    searcher = client_for(issue_key(tenant=tenant, scopes=("search",), on_behalf_of=True))
    body = {"query": "harbour ferry", "on_behalf_of": " ERIN@example.com", "top_k": 10}
    found = {hit["document_id"] for hit in post(searcher, "search", body).json()["results"]}
    assert found == {"memo", "hr"}
    assert principal_tokens(tenant=tenant, user_external_id="erin@EXAMPLE.com") == principal_tokens(
        tenant=tenant, user_external_id="erin@example.com"
    )


@pytest.fixture
def tenant_api(db: None) -> tuple[Tenant, APIClient]:
    tenant = TenantFactory.create(slug="acme")
    return tenant, client_for(issue_key(tenant=tenant))


@pytest.mark.django_db
def test_the_admin_refuses_another_spelling_of_an_existing_principal(staff: Client) -> None:
    tenant = TenantFactory.create()
    Principal.objects.create(tenant=tenant, kind="user", external_id="erin@example.com")
    form = {"tenant": tenant.pk, "kind": "user", "external_id": "Erin@Example.com ", "display_name": ""}
    response = staff.post("/admin/knowledge/principal/add/", form)
    assert response.status_code == 200 and "already exists" in response.content.decode()
    assert Principal.objects.count() == 1


def _insert(cursor: Any, tenant_id: int, kind: str, external_id: str) -> int:
    cursor.execute(
        "INSERT INTO knowledge_principal (tenant_id, kind, external_id, display_name) "
        "VALUES (%s, %s, %s, '') RETURNING id",
        [tenant_id, kind, external_id],
    )
    return int(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_the_migration_merges_existing_spellings_with_their_grants_and_tokens(
    capsys: pytest.CaptureFixture[str],
) -> None:
    api = client_for(issue_key(tenant=(tenant := TenantFactory.create(slug="acme"))))
    post(api, "index", {"id": "a", "content": "harbour", "acl": {"users": ["erin@example.com"]}})
    post(api, "index", {"id": "b", "content": "ferry", "acl": {"users": ["sam@example.com"]}})
    with connection.cursor() as cursor:  # spellings as a main before this change could store them
        upper = _insert(cursor, tenant.pk, "user", "Erin@Example.com")
        group = _insert(cursor, tenant.pk, "group", "hr")
        spaced = _insert(cursor, tenant.pk, "group", "hr ")
    b = Document.objects.get(external_id="b")
    b.allowed_principals.add(upper)
    sam = Principal.objects.get(external_id="sam@example.com")
    Chunk.objects.filter(document=b).update(acl_tokens=[f"u:{sam.pk}", f"u:{upper}"])
    erin = Principal.objects.get(external_id="erin@example.com")
    Principal.objects.get(pk=upper).groups.add(spaced)
    key, _ = ApiKey.issue(tenant=tenant, name="as erin", scopes=["search"], principal_id=upper)
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([("knowledge", "0023_eval_corpora")])
        executor.loader.build_graph()
        executor.migrate([("knowledge", "0024_canonical_principal_names")])
    finally:  # the later migrations back, whatever happened: the rest of the suite needs them
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    report = capsys.readouterr().out
    assert "merged user principals 'erin@example.com', 'Erin@Example.com'" in report
    assert "merged group principals 'hr', 'hr '" in report
    assert not Principal.objects.filter(pk__in=[upper, spaced]).exists()
    assert ApiKey.objects.get(pk=key.pk).principal_id == erin.pk
    assert set(b.allowed_principals.values_list("pk", flat=True)) >= {erin.pk}
    assert list(Principal.objects.get(pk=erin.pk).groups.values_list("pk", flat=True)) == [group]
    tokens = set(Chunk.objects.filter(document=b).values_list("acl_tokens", flat=True)[0])
    assert f"u:{erin.pk}" in tokens and f"u:{upper}" not in tokens
