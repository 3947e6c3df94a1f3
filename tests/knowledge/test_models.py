"""Constraints and validation of the canonical models."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from knowledge.models import Connector, Tenant
from tests.factories import (
    ChunkFactory,
    ConnectorFactory,
    DocumentFactory,
    EnvironmentFactory,
    PrincipalFactory,
    TenantFactory,
)

pytestmark = pytest.mark.django_db


def test_primary_tenant_exists_after_migrations() -> None:
    assert Tenant.objects.filter(slug=Tenant.DEFAULT_SLUG).exists()


def test_document_external_id_unique_per_connector_not_globally() -> None:
    doc = DocumentFactory.create(external_id="same")
    DocumentFactory.create(external_id="same")  # another connector: fine
    with pytest.raises(IntegrityError), transaction.atomic():
        DocumentFactory.create(external_id="same", connector=doc.connector)


def test_chunk_index_unique_per_document() -> None:
    chunk = ChunkFactory.create(chunk_index=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        ChunkFactory.create(chunk_index=0, document=chunk.document)


def test_content_hash_must_be_sha256_hex() -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        DocumentFactory.create(content_hash="not-a-hash")


def test_environment_slug_unique_per_tenant() -> None:
    env = EnvironmentFactory.create(slug="prod")
    EnvironmentFactory.create(slug="prod")
    with pytest.raises(IntegrityError), transaction.atomic():
        EnvironmentFactory.create(slug="prod", tenant=env.tenant)


def test_principal_unique_per_tenant_kind_and_id() -> None:
    p = PrincipalFactory.create(external_id="a@example.com")
    with pytest.raises(IntegrityError), transaction.atomic():
        PrincipalFactory.create(external_id="a@example.com", tenant=p.tenant)


def test_user_principal_needs_an_email() -> None:
    with pytest.raises(ValidationError, match="e-mail"):
        PrincipalFactory.build(external_id="not-an-email", tenant=TenantFactory.create()).full_clean()


@pytest.mark.parametrize(
    ("kind", "config", "message"),
    [
        ("filesystem", {}, "absolute directory path"),
        ("filesystem", {"path": "relative/dir"}, "absolute directory path"),
        ("filesystem", {"path": "/srv", "patterns": "*.md"}, "list of glob patterns"),
        ("filesystem", {"path": "/srv", "depth": 3}, "unknown keys"),
        ("web", {"urls": []}, "urls: required"),
        ("web", {"urls": ["ftp://x"]}, "must be a list of http"),
        ("api", {"path": "/x"}, "takes no configuration"),
    ],
)
def test_connector_config_is_validated(kind: str, config: dict[str, object], message: str) -> None:
    connector = Connector(tenant=TenantFactory.create(), name="c", kind=kind, config=config)
    with pytest.raises(ValidationError, match=message):
        connector.full_clean()


def test_valid_connector_configs_pass() -> None:
    tenant = TenantFactory.create()
    Connector(tenant=tenant, name="fs", kind="filesystem", config={"path": "/srv/docs"}).full_clean()
    Connector(tenant=tenant, name="web", kind="web", config={"urls": ["https://example.com"]}).full_clean()


def test_connector_kind_constraint_in_database() -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        ConnectorFactory.create(kind="ftp")


def test_cross_tenant_environment_rejected() -> None:
    connector = ConnectorFactory.create()
    foreign_env = EnvironmentFactory.create()
    connector.environment = foreign_env
    with pytest.raises(ValidationError, match="another tenant"):
        connector.full_clean()
    doc = DocumentFactory.build(connector=connector, tenant=connector.tenant, environment=foreign_env)
    with pytest.raises(ValidationError, match="another tenant"):
        doc.clean()
