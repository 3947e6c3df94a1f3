"""ACL and deletion ownership across write paths: syncs never undo an admin's restriction or delete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from knowledge.models import Chunk, Connector, Document
from knowledge.services.connector_sync import connector_sync
from knowledge.services.documents import document_clear_acl_override, document_restore, document_soft_delete
from tests.factories import ConnectorFactory, GroupFactory, PrincipalFactory
from tests.knowledge.admin_forms import post_document_change

pytestmark = pytest.mark.django_db


def fs_connector(path: Path, *, public: bool = True) -> Connector:
    return ConnectorFactory.create(kind="filesystem", config={"path": str(path)}, default_is_public=public)


def tokens(document: Document) -> set[tuple[str, ...]]:
    return {
        tuple(sorted(t)) for t in Chunk.objects.filter(document=document).values_list("acl_tokens", flat=True)
    }


def test_resync_keeps_an_admins_acl_override(tmp_path: Path, staff: Client) -> None:
    (tmp_path / "merger.md").write_text("# Merger\nThe merger closes in March.")
    connector = fs_connector(tmp_path)
    connector_sync(connector=connector)
    document = Document.objects.get(connector=connector, external_id="merger.md")
    assert tokens(document) == {("public",)}
    user = PrincipalFactory.create(tenant=connector.tenant)
    post_document_change(staff, document, is_public=False, allowed_principals=[user.pk])
    assert tokens(document) == {(user.acl_token,)}

    outcome = connector_sync(connector=connector)
    assert outcome.stats is not None and outcome.stats.unchanged == 1
    document.refresh_from_db()
    assert not document.is_public and document.acl_overridden
    assert tokens(document) == {(user.acl_token,)}

    document_clear_acl_override(document=document)
    assert tokens(document) == {("public",)}


def test_resync_keeps_an_admins_soft_delete_and_prunes_what_the_source_dropped(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("alpha")
    (tmp_path / "b.md").write_text("beta")
    connector = fs_connector(tmp_path)
    connector_sync(connector=connector)
    document = Document.objects.get(connector=connector, external_id="a.md")
    document_soft_delete(document=document)
    connector_sync(connector=connector)
    document.refresh_from_db()
    assert document.deleted_at is not None and Chunk.objects.get(document=document).is_deleted

    document_restore(document=document)
    (tmp_path / "a.md").unlink()
    connector_sync(connector=connector)  # gone from the source: deleted with its chunks
    assert not Document.objects.filter(pk=document.pk).exists()
    assert not Chunk.objects.filter(document_id=document.pk).exists()
    (tmp_path / "a.md").write_text("alpha")
    connector_sync(connector=connector)  # back at the source: a new document
    again = Document.objects.get(connector=connector, external_id="a.md")
    assert again.deleted_at is None and not Chunk.objects.get(document=again).is_deleted


def test_sidecar_acls_are_inherited_and_a_bad_one_fails_closed(tmp_path: Path) -> None:
    connector = fs_connector(tmp_path, public=True)
    group = GroupFactory.create(tenant=connector.tenant, external_id="legal")
    (tmp_path / "open.md").write_text("open to everyone")
    (tmp_path / "legal" / "deep").mkdir(parents=True)
    (tmp_path / "legal" / ".kbacl.json").write_text('{"groups": ["legal"], "users": ["lee@example.com"]}')
    (tmp_path / "legal" / "deep" / "contract.md").write_text("contract terms")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / ".kbacl.json").write_text("{not json")
    (tmp_path / "broken" / "secret.md").write_text("must not become public")
    outcome = connector_sync(connector=connector)
    docs = {d.external_id: d for d in Document.objects.filter(connector=connector)}
    assert set(docs) == {"open.md", "legal/deep/contract.md", "broken/secret.md"}
    assert tokens(docs["broken/secret.md"]) == {()}  # private: nobody, never the connector's public default
    lee = connector.tenant.principals.get(external_id="lee@example.com")
    assert tokens(docs["legal/deep/contract.md"]) == {tuple(sorted([group.acl_token, lee.acl_token]))}
    assert docs["legal/deep/contract.md"].acl_origin == Document.AclOrigin.SOURCE
    assert tokens(docs["open.md"]) == {("public",)}
    assert any("broken/secret.md" in e and ".kbacl.json" in e for e in outcome.errors)


def test_connector_default_acl_applies_and_follows_admin_changes(tmp_path: Path, staff: Client) -> None:
    (tmp_path / "a.md").write_text("alpha")
    connector = fs_connector(tmp_path, public=False)
    connector_sync(connector=connector)
    document = Document.objects.get(connector=connector)
    assert tokens(document) == {()}  # private by default: nobody
    group = GroupFactory.create(tenant=connector.tenant)
    url = reverse("admin:knowledge_connector_change", args=[connector.pk])
    response = staff.post(
        url,
        {
            "name": connector.name,
            "config": json.dumps(connector.config),
            "default_principals": [group.pk],
            "enabled": "on",
            "sync_interval": "01:00:00",
            **{f"runs-{k}": v for k, v in (("TOTAL_FORMS", "0"), ("INITIAL_FORMS", "0"))},
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert tokens(document) == {(group.acl_token,)}


def test_a_sync_never_widens_what_an_admin_narrowed(tmp_path: Path, staff: Client) -> None:
    (tmp_path / ".kbacl.json").write_text('{"public": true}')
    (tmp_path / "a.md").write_text("alpha")
    connector = fs_connector(tmp_path, public=False)
    connector_sync(connector=connector)
    document = Document.objects.get(connector=connector)
    post_document_change(staff, document, is_public=False)
    (tmp_path / ".kbacl.json").write_text('{"public": true, "groups": ["everyone-else"]}')
    connector_sync(connector=connector)
    document.refresh_from_db()
    assert tokens(document) == {()} and document.source_is_public
    assert list(document.source_principals.values_list("external_id", flat=True)) == ["everyone-else"]
