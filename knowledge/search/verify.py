"""Canonical verification: an external index's hits are re-checked and rehydrated from PostgreSQL.

Decided from the documents' canonical ACL, environment and deletion state (not the chunks'
denormalised copies), so a stale index cannot widen access. Only the id and score of an external
hit survive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from django.db.models import Q

from knowledge.models import Chunk
from retrieval_backends.types import PUBLIC_TOKEN, AccessScope, LaneHit, principal_ids_of


def scope_q(scope: AccessScope) -> Q:
    """The ORM twin of the lanes' scope filter, over Chunk's canonical document fields."""
    q = Q(document__tenant_id=scope.tenant_id, document__deleted_at__isnull=True)
    connector_ids = getattr(scope, "connector_ids", None)
    if connector_ids is not None:
        q &= Q(document__connector_id__in=connector_ids)
    if scope.environment_id is not None:
        q &= Q(document__environment_id__isnull=True) | Q(document__environment_id=scope.environment_id)
    if not scope.bypass_acl:
        acl = Q(document__allowed_principals__id__in=principal_ids_of(scope.principal_tokens))
        if PUBLIC_TOKEN in scope.principal_tokens:
            acl |= Q(document__is_public=True)
        q &= acl
    return q


def verify_lanes(scope: AccessScope, lanes: Mapping[str, Sequence[LaneHit]]) -> dict[str, list[LaneHit]]:
    """Every lane's hits that exist and are visible in `scope`, with canonical fields, in order: one
    canonical look-up for all their chunks."""
    if scope.sees_nothing:
        return {name: [] for name in lanes}
    ids = {h.chunk_id for hits in lanes.values() for h in hits}
    chunks = {
        c.pk: c
        for c in Chunk.objects.filter(scope_q(scope), pk__in=ids).select_related("document").distinct()
    }
    return {name: _canonical(hits, chunks) for name, hits in lanes.items()}


def verify_hits(scope: AccessScope, hits: Sequence[LaneHit]) -> list[LaneHit]:
    """`verify_lanes` of one list of hits."""
    return verify_lanes(scope, {"hits": hits})["hits"]


def _canonical(hits: Sequence[LaneHit], chunks: Mapping[int, Chunk]) -> list[LaneHit]:
    verified: list[LaneHit] = []
    for hit in hits:
        chunk = chunks.get(hit.chunk_id)
        if chunk is None:
            continue
        verified.append(
            replace(
                hit,
                document_id=chunk.document_id,
                chunk_index=chunk.chunk_index,
                content=chunk.content,
                title=chunk.document.title,
                source_url=chunk.document.source_url,
                tenant_id=chunk.document.tenant_id,
                parent_index=chunk.parent_index,
                page=chunk.page,
                document_external_id=chunk.document.external_id,
            )
        )
    return verified
