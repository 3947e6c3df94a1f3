"""The connector service: every connector write is validated, and a new default ACL reaches its documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge.errors import InvalidInput
from knowledge.models import Chunk, Connector, Document
from knowledge.services.connector_sync import connector_sync
from knowledge.services.connectors import (
    connector_config_merge,
    connector_ensure,
    connector_set_default_acl,
    connector_update,
)
from knowledge.services.documents import document_set_acl
from tests.factories import ConnectorFactory, GroupFactory, PrincipalFactory, TenantFactory

pytestmark = pytest.mark.django_db


def tokens(document: Document) -> set[str]:
    return {
        t for row in Chunk.objects.filter(document=document).values_list("acl_tokens", flat=True) for t in row
    }


def test_ensure_creates_once_and_returns_the_existing_one_unchanged() -> None:
    tenant = TenantFactory.create()
    made, created = connector_ensure(
        tenant=tenant, name="files", kind="filesystem", config={"path": "/srv/a"}
    )
    again, created_again = connector_ensure(tenant=tenant, name="files", kind="api")
    assert created and not created_again
    assert again.pk == made.pk and again.kind == "filesystem" and again.config == {"path": "/srv/a"}


def test_ensure_refuses_an_invalid_connector_and_creates_nothing() -> None:
    tenant = TenantFactory.create()
    with pytest.raises(InvalidInput) as bad_path:
        connector_ensure(tenant=tenant, name="files", kind="filesystem", config={"path": "relative/dir"})
    assert bad_path.value.field == "config" and "absolute" in str(bad_path.value)
    with pytest.raises(InvalidInput):
        connector_ensure(tenant=tenant, name="other", kind="no-such-kind")
    assert not Connector.objects.filter(tenant=tenant).exists()


def test_update_validates_and_leaves_the_row_alone_on_error() -> None:
    connector = ConnectorFactory.create(kind="filesystem", config={"path": "/srv/a"})
    with pytest.raises(InvalidInput):
        connector_update(connector=connector, config={"path": "not-absolute"})
    connector.refresh_from_db()
    assert connector.config == {"path": "/srv/a"}
    assert connector_config_merge(connector=connector, patterns=["*.md"]).config == {
        "path": "/srv/a",
        "patterns": ["*.md"],
    }


def test_a_new_default_acl_reaches_the_documents_that_use_it_but_not_an_admins_override(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.md").write_text("alpha")
    (tmp_path / "b.md").write_text("beta")
    connector = ConnectorFactory.create(
        kind="filesystem", config={"path": str(tmp_path)}, default_is_public=True
    )
    connector_sync(connector=connector)
    a = Document.objects.get(connector=connector, external_id="a.md")
    b = Document.objects.get(connector=connector, external_id="b.md")
    admin_pick = PrincipalFactory.create(tenant=connector.tenant)
    document_set_acl(document=b, is_public=False, principals=[admin_pick])
    group = GroupFactory.create(tenant=connector.tenant)

    changed = connector_set_default_acl(connector=connector, is_public=False, principals=[group])

    assert changed == 1
    assert tokens(a) == {group.acl_token} and tokens(b) == {admin_pick.acl_token}
    connector.refresh_from_db()
    assert not connector.default_is_public and list(connector.default_principals.all()) == [group]

    connector_update(connector=connector, default_is_public=True)
    assert tokens(a) == {"public", group.acl_token} and tokens(b) == {admin_pick.acl_token}


def test_a_default_acl_naming_another_tenants_principal_is_refused() -> None:
    connector = ConnectorFactory.create()
    stranger = PrincipalFactory.create()
    with pytest.raises(InvalidInput) as refused:
        connector_set_default_acl(connector=connector, is_public=False, principals=[stranger])
    assert refused.value.field == "default_principals"
    assert not connector.default_principals.exists()
