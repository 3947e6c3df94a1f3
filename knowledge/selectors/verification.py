"""Canonical verification: external hits are re-checked and rehydrated from PostgreSQL."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from django.db.models import Q

from knowledge.models import Chunk
from retrieval_backends.types import AccessScope, LaneHit


def scope_q(scope: AccessScope) -> Q:
    """The ORM twin of the backends' scope filter, over Chunk's canonical document fields."""
    q = Q(document__tenant_id=scope.tenant_id, document__deleted_at__isnull=True)
    connector_ids = getattr(scope, "connector_ids", None)
    if connector_ids is not None:
        q &= Q(document__connector_id__in=connector_ids)
    if scope.environment_id is not None:
        q &= Q(document__environment_id__isnull=True) | Q(document__environment_id=scope.environment_id)
    if not scope.bypass_acl:
        tokens = scope.principal_tokens
        principal_ids = [
            int(t[2:]) for t in tokens if t[:2] in {"u:", "g:"} and t[2:].isascii() and t[2:].isdigit()
        ]
        acl = Q(document__allowed_principals__id__in=principal_ids)
        if "public" in tokens:
            acl |= Q(document__is_public=True)
        q &= acl
    return q


def verify_lanes(scope: AccessScope, lanes: Mapping[str, Sequence[LaneHit]]) -> dict[str, list[LaneHit]]:
    """`verify_hits` for every lane at once: one canonical look-up for all their chunks."""
    if scope.sees_nothing:
        return {name: [] for name in lanes}
    ids = {h.chunk_id for hits in lanes.values() for h in hits}
    chunks = {
        c.pk: c
        for c in Chunk.objects.filter(scope_q(scope), pk__in=ids).select_related("document").distinct()
    }
    return {name: _canonical(hits, chunks) for name, hits in lanes.items()}


def verify_hits(scope: AccessScope, hits: Sequence[LaneHit]) -> list[LaneHit]:
    """Keep only hits whose chunk exists and is visible in `scope`, with canonical fields, in order.

    Decided from the documents' canonical ACL, environment and deletion state (not the chunks'
    denormalised copies), so a stale index cannot widen access. Only the id and score of the
    external hit survive.
    """
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
