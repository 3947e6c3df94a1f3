"""The denormalised ACL/environment/deletion fields follow their document."""

from __future__ import annotations

import pytest

from knowledge.models import Chunk, ChunkEmbedding
from knowledge.services.access import document_access_sync
from knowledge.services.documents import (
    document_restore,
    document_set_acl,
    document_soft_delete,
    document_upsert,
)
from tests.factories import ConnectorFactory, EnvironmentFactory, GroupFactory, PrincipalFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def indexed_document():  # type: ignore[no-untyped-def]
    connector = ConnectorFactory.create()
    user = PrincipalFactory.create(tenant=connector.tenant)
    result = document_upsert(
        connector=connector,
        external_id="d",
        title="T",
        content="# A\n" + "alpha " * 300 + "\n# B\nbeta gamma",
        principals=[user],
    )
    return result.document, user


def _tokens(document_id: int) -> set[tuple[str, ...]]:
    chunk_tokens = {
        tuple(t) for t in Chunk.objects.filter(document_id=document_id).values_list("acl_tokens", flat=True)
    }
    emb_tokens = {
        tuple(t)
        for t in ChunkEmbedding.objects.filter(chunk__document_id=document_id).values_list(
            "acl_tokens", flat=True
        )
    }
    return chunk_tokens | emb_tokens


def test_upsert_writes_user_tokens_to_chunks_and_embeddings(indexed_document) -> None:  # type: ignore[no-untyped-def]
    document, user = indexed_document
    assert Chunk.objects.filter(document=document).count() >= 2
    assert ChunkEmbedding.objects.filter(chunk__document=document).count() == document.chunks.count()
    assert _tokens(document.pk) == {(f"u:{user.pk}",)}


def test_acl_change_reaches_every_chunk_and_vector(indexed_document) -> None:  # type: ignore[no-untyped-def]
    document, user = indexed_document
    group = GroupFactory.create(tenant=document.tenant)
    document_set_acl(document=document, is_public=True, principals=[group])
    assert _tokens(document.pk) == {tuple(sorted(["public", f"g:{group.pk}"]))}


def test_environment_change_is_synced(indexed_document) -> None:  # type: ignore[no-untyped-def]
    document, _ = indexed_document
    env = EnvironmentFactory.create(tenant=document.tenant)
    document.environment = env
    document.save()
    assert document_access_sync(document=document) > 0
    assert set(Chunk.objects.filter(document=document).values_list("environment_id", flat=True)) == {env.pk}
    assert set(
        ChunkEmbedding.objects.filter(chunk__document=document).values_list("environment_id", flat=True)
    ) == {env.pk}


def test_sync_is_idempotent(indexed_document) -> None:  # type: ignore[no-untyped-def]
    document, _ = indexed_document
    assert document_access_sync(document=document) == 0


def test_soft_delete_and_restore_flip_the_deleted_flag(indexed_document) -> None:  # type: ignore[no-untyped-def]
    document, _ = indexed_document
    document_soft_delete(document=document)
    document.refresh_from_db()
    assert document.deleted_at is not None
    assert set(Chunk.objects.filter(document=document).values_list("is_deleted", flat=True)) == {True}
    assert set(
        ChunkEmbedding.objects.filter(chunk__document=document).values_list("is_deleted", flat=True)
    ) == {True}
    first_deleted_at = document.deleted_at
    document_soft_delete(document=document)  # twice: same state
    document.refresh_from_db()
    assert document.deleted_at == first_deleted_at
    document_restore(document=document)
    assert set(Chunk.objects.filter(document=document).values_list("is_deleted", flat=True)) == {False}
