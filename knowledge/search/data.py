"""The stages' data port (`StageData`): what a stage may read of the canonical store, bounded by the
hits it asks about and filtered by the caller's scope where it reads content."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import Q

from knowledge.models import Chunk, Document
from knowledge.pipeline.fusers.base import FusedHit
from knowledge.search.verify import scope_q
from knowledge.store import hits as store_hits
from knowledge.store.vectors import get_chunk_vectors
from retrieval_backends.types import PARENT_UNKNOWN, SearchScope

DOCUMENT_FIELDS = frozenset({"source_updated_at", "updated_at"})


class SearchData:
    def chunk_vectors(
        self, chunk_ids: Sequence[int], dimensions: int, model: str | None
    ) -> dict[int, tuple[float, ...]]:
        return get_chunk_vectors(chunk_ids, dimensions, model)

    def parent_indexes(self, hits: Sequence[FusedHit]) -> dict[int, int]:
        """The lanes of PostgreSQL report each hit's parent index, so this usually costs no statement."""
        parents = {
            f.chunk_id: f.hit.parent_index
            for f in hits
            if f.hit.parent_index is not None and f.hit.parent_index != PARENT_UNKNOWN
        }
        unknown = [f.chunk_id for f in hits if f.hit.parent_index == PARENT_UNKNOWN]
        parents.update(store_hits.parent_indexes(unknown))
        return parents

    def visible_chunk_texts(
        self, scope: SearchScope, keys: set[tuple[int, int]]
    ) -> Mapping[tuple[int, int], str]:
        if not keys:
            return {}
        wanted = Q()
        for document_id, index in keys:
            wanted |= Q(document_id=document_id, chunk_index=index)
        visible = Chunk.objects.filter(scope_q(scope)).filter(wanted).distinct()
        return {(c.document_id, c.chunk_index): c.content for c in visible}

    def document_values(self, document_ids: set[int], field_name: str) -> dict[int, Any]:
        rows = Document.objects.filter(pk__in=document_ids)
        if field_name in DOCUMENT_FIELDS:
            return {pk: value for pk, value in rows.values_list("pk", field_name) if value is not None}
        found = {}
        for pk, metadata in rows.values_list("pk", "metadata"):
            value: Any = metadata
            for part in field_name.split(".")[1:]:
                value = value.get(part) if isinstance(value, dict) else None
            if value is not None:
                found[pk] = value
        return found
