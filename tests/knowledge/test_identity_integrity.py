"""Identities never cross tenants: model validation, the database's own triggers, group expansion."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction

from knowledge.errors import InvalidInput
from knowledge.models import ApiKey, Connector, Principal
from knowledge.selectors.identity import principal_tokens
from knowledge.services.documents import document_set_acl, document_upsert
from tests.factories import (
    ConnectorFactory,
    EnvironmentFactory,
    GroupFactory,
    PrincipalFactory,
    TenantFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def two() -> tuple[Connector, Principal]:
    """A connector of one tenant and a user of another."""
    return ConnectorFactory.create(), PrincipalFactory.create(tenant=TenantFactory.create())


def refused(call: object) -> bool:
    try:
        with transaction.atomic():
            call()  # type: ignore[operator]
    except IntegrityError as exc:
        return "crosses tenants" in str(exc) or "cannot change" in str(exc) or "not a group" in str(exc)
    return False


def test_api_key_refuses_a_principal_of_another_tenant(two: tuple[Connector, Principal]) -> None:
    connector, foreign = two
    key = ApiKey(tenant=connector.tenant, name="k", scopes=["search"], principal=foreign)
    with pytest.raises(ValidationError, match="another tenant"):
        key.clean()
    key.set_new_secret()
    assert refused(key.save)


def test_document_grants_of_another_tenant_are_refused(two: tuple[Connector, Principal]) -> None:
    connector, foreign = two
    with pytest.raises(InvalidInput, match="another tenant"):
        document_upsert(connector=connector, external_id="d", content="x", principals=[foreign])
    document = document_upsert(connector=connector, external_id="d", content="x").document
    with pytest.raises(InvalidInput, match="another tenant"):
        document_set_acl(document=document, is_public=False, principals=[foreign])
    assert refused(lambda: document.allowed_principals.add(foreign))
    assert refused(lambda: document.source_principals.add(foreign))
    assert refused(lambda: connector.default_principals.add(foreign))


def test_memberships_must_be_groups_of_the_same_tenant(two: tuple[Connector, Principal]) -> None:
    connector, foreign_user = two
    user = PrincipalFactory.create(tenant=connector.tenant)
    foreign_group = GroupFactory.create(tenant=foreign_user.tenant)
    assert refused(lambda: user.groups.add(foreign_group))
    assert refused(lambda: user.groups.add(PrincipalFactory.create(tenant=connector.tenant)))


def test_group_expansion_ignores_foreign_and_non_group_memberships(two: tuple[Connector, Principal]) -> None:
    connector, _ = two
    user = PrincipalFactory.create(tenant=connector.tenant)
    group = GroupFactory.create(tenant=connector.tenant)
    foreign_group = GroupFactory.create(tenant=TenantFactory.create())
    user.groups.add(group)
    with transaction.atomic(), connection.cursor() as cursor:  # as if written before the triggers existed
        cursor.execute("SET LOCAL session_replication_role = replica")
        user.groups.add(foreign_group)
        cursor.execute("SET LOCAL session_replication_role = origin")
    tokens = principal_tokens(tenant=connector.tenant, user_external_id=user.external_id)
    assert tokens == {"public", user.acl_token, group.acl_token}


def test_tenants_of_connectors_principals_environments_and_documents_never_change() -> None:
    connector = ConnectorFactory.create()
    other = TenantFactory.create()
    document = document_upsert(connector=connector, external_id="d", content="x").document
    user = PrincipalFactory.create(tenant=connector.tenant)
    environment = EnvironmentFactory.create(tenant=connector.tenant)
    for model, pk in ((Connector, connector.pk), (Principal, user.pk), (type(document), document.pk)):
        assert refused(lambda model=model, pk=pk: model.objects.filter(pk=pk).update(tenant=other))
    assert refused(lambda: type(environment).objects.filter(pk=environment.pk).update(tenant=other))


def test_a_document_cannot_point_at_another_tenants_environment() -> None:
    connector = ConnectorFactory.create()
    document = document_upsert(connector=connector, external_id="d", content="x").document
    foreign = EnvironmentFactory.create()
    assert refused(lambda: type(document).objects.filter(pk=document.pk).update(environment=foreign))
