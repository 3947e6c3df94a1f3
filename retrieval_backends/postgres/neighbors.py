"""Neighbouring chunks of anchors, walking outwards until a gap or an inaccessible chunk."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connection

from retrieval_backends.postgres.sql import CHUNK, DOCUMENT, rows_to_hits, scope_filter
from retrieval_backends.types import AccessScope, LaneHit, NeighborAnchor


def find_neighbors(scope: AccessScope, anchors: Iterable[NeighborAnchor], radius: int) -> list[LaneHit]:
    anchor_list = list(dict.fromkeys(anchors))
    if scope.sees_nothing or radius <= 0 or not anchor_list:
        return []
    where, params = scope_filter("c", scope)
    sql = f"""
SELECT c.id, c.document_id, c.chunk_index, 0.0, c.content, d.title, d.source_url, c.tenant_id
FROM unnest(%s::bigint[], %s::int[]) AS a(document_id, chunk_index)
JOIN {CHUNK} c ON c.document_id = a.document_id
    AND c.chunk_index BETWEEN a.chunk_index - %s AND a.chunk_index + %s
JOIN {DOCUMENT} d ON d.id = c.document_id
WHERE {where}
"""
    args: list[Any] = [
        [a.document_id for a in anchor_list],
        [a.chunk_index for a in anchor_list],
        radius,
        radius,
        *params,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, args)
        visible = {(h.document_id, h.chunk_index): h for h in rows_to_hits(cursor.fetchall())}
    return _walk(anchor_list, visible, radius)


def _walk(
    anchors: list[NeighborAnchor], visible: dict[tuple[int, int], LaneHit], radius: int
) -> list[LaneHit]:
    anchor_keys = {(a.document_id, a.chunk_index) for a in anchors}
    found: dict[tuple[int, int], LaneHit] = {}
    for anchor in anchors:
        for step in (-1, 1):
            for distance in range(1, radius + 1):
                key = (anchor.document_id, anchor.chunk_index + step * distance)
                hit = visible.get(key)
                if hit is None:
                    break
                if key not in anchor_keys:
                    found.setdefault(key, hit)
    return sorted(found.values(), key=lambda h: (h.document_id, h.chunk_index))
