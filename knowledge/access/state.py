"""The state an index mirrors of each document, built in one place: tenant, connector, environment,
ACL tokens (from the effective grants), deletion, title, version and, for an external index, the
chunks with their vectors. The filters on PostgreSQL's own rows and every push use it."""

from __future__ import annotations

from collections.abc import Sequence

from knowledge.access.grants import document_grants
from knowledge.access.principals import tokens_for
from knowledge.models import Document
from knowledge.store.mirror import mirrored_chunks
from retrieval_backends.types import DocumentState


def document_states(*, document_ids: Sequence[int], with_chunks: bool = False) -> list[DocumentState]:
    """The existing documents' states (read in a few statements; run them in one snapshot when they
    must agree with each other)."""
    rows = list(
        Document.objects.filter(pk__in=document_ids).values_list(
            *("pk", "tenant_id", "connector_id", "environment_id", "is_public", "deleted_at", "title"),
            "index_version",
        )
    )
    ids = [r[0] for r in rows]
    grants, kinds = document_grants(ids)
    chunks = mirrored_chunks(ids) if with_chunks else {}
    return [
        DocumentState(
            document_id=pk,
            tenant_id=tenant_id,
            connector_id=connector_id,
            environment_id=environment_id,
            acl_tokens=tuple(tokens_for(is_public=is_public, principal_ids=grants[pk], kinds=kinds)),
            is_deleted=deleted_at is not None,
            title=title,
            chunks=tuple(chunks.get(pk, ())) if with_chunks else None,
            version=version,
        )
        for pk, tenant_id, connector_id, environment_id, is_public, deleted_at, title, version in rows
    ]
