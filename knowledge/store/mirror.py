"""What an external index mirrors of documents' content: every chunk with every vector, in order."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence

from django.db import connection

from knowledge.models import Chunk
from knowledge.store.sql import VECTOR_TEXT
from knowledge.store.tables import CHUNK, EMBEDDING
from retrieval_backends.types import MirroredChunk

VECTORS = (
    f"SELECT e.chunk_id, e.model, {VECTOR_TEXT.format('e')} FROM {EMBEDDING} e "
    f"JOIN {CHUNK} c ON c.id = e.chunk_id WHERE c.document_id = ANY(%s)"
)


def mirrored_chunks(document_ids: Sequence[int]) -> dict[int, list[MirroredChunk]]:
    """document id -> its chunks with all their vectors, in chunk order."""
    vectors: dict[int, dict[str, tuple[float, ...]]] = defaultdict(dict)
    with connection.cursor() as cursor:
        cursor.execute(VECTORS, [list(document_ids)])
        for chunk_id, model, text in cursor.fetchall():
            vectors[chunk_id][model] = tuple(json.loads(text))
    found: dict[int, list[MirroredChunk]] = defaultdict(list)
    rows = Chunk.objects.filter(document_id__in=document_ids).order_by("document_id", "chunk_index")
    for pk, document_id, index, content, language in rows.values_list(
        "pk", "document_id", "chunk_index", "content", "language"
    ):
        found[document_id].append(
            MirroredChunk(
                chunk_id=pk, chunk_index=index, content=content, language=language, vectors=vectors[pk]
            )
        )
    return found
