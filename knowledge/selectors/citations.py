"""Citation details of search hits that the lanes do not carry (the page a chunk starts on)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from knowledge.models import Chunk

if TYPE_CHECKING:
    from knowledge.selectors.search import SearchHit


def with_pages(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """The hits with `page` set from their chunks, in one query over the final (few) hits."""
    if not hits:
        return []
    pages = dict(
        Chunk.objects.filter(pk__in=[h.chunk_id for h in hits], page__isnull=False).values_list("pk", "page")
    )
    return [replace(h, page=pages[h.chunk_id]) if h.chunk_id in pages else h for h in hits]
