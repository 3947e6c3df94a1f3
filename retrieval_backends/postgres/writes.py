"""Chunk and embedding writes for the PostgreSQL backend."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection, transaction

from knowledge.models import Chunk
from retrieval_backends.base import validate_dimensions
from retrieval_backends.postgres.sql import CHUNK, EMBEDDING, vector_literal
from retrieval_backends.types import ChunkInput, EmbeddingUpdate, StoredChunk


def to_stored(chunk: Chunk) -> StoredChunk:
    return StoredChunk(
        id=chunk.pk,
        document_id=chunk.document_id,
        chunk_index=chunk.chunk_index,
        content=chunk.content,
        parent_index=chunk.parent_index,
        token_count=chunk.token_count,
    )


def insert_chunks(chunks: Sequence[ChunkInput]) -> list[StoredChunk]:
    """Bulk-insert chunks, then build their tsvectors with each chunk's own language."""
    if not chunks:
        return []
    rows = [
        Chunk(
            document_id=c.document_id,
            chunk_index=c.chunk_index,
            parent_index=c.parent_index,
            content=c.content,
            token_count=c.token_count,
            language=c.language,
            tenant_id=c.tenant_id,
            connector_id=c.connector_id,
            environment_id=c.environment_id,
            is_deleted=c.is_deleted,
            acl_tokens=list(c.acl_tokens),
        )
        for c in chunks
    ]
    with transaction.atomic():
        created = Chunk.objects.bulk_create(rows, batch_size=1000)
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {CHUNK} SET search_vector = to_tsvector(language::regconfig, content) "
                "WHERE id = ANY(%s)",
                [[c.pk for c in created]],
            )
    return [to_stored(c) for c in created]


UPSERT_EMBEDDINGS = f"""
INSERT INTO {EMBEDDING}
    (chunk_id, model, dimensions, embedding, tenant_id, connector_id, environment_id,
     is_deleted, acl_tokens, created_at)
SELECT c.id, u.model, %s, u.vec::vector, c.tenant_id, c.connector_id, c.environment_id,
       c.is_deleted, c.acl_tokens, now()
FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS u(chunk_id, model, vec)
JOIN {CHUNK} c ON c.id = u.chunk_id
ON CONFLICT (chunk_id, model) DO UPDATE
    SET embedding = EXCLUDED.embedding, dimensions = EXCLUDED.dimensions
"""


def index_embeddings(updates: Sequence[EmbeddingUpdate], dimensions: int) -> int:
    """Upsert vectors; filter columns are copied from the chunk in the same statement."""
    validate_dimensions(updates, dimensions)
    if not updates:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            UPSERT_EMBEDDINGS,
            [
                dimensions,
                [u.chunk_id for u in updates],
                [u.model for u in updates],
                [vector_literal(u.vector) for u in updates],
            ],
        )
        return cursor.rowcount


def delete_document_chunks(document_id: int) -> int:
    """Delete a document's vectors and chunks; returns the number of chunks deleted."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {EMBEDDING} WHERE chunk_id IN (SELECT id FROM {CHUNK} WHERE document_id = %s)",
            [document_id],
        )
        cursor.execute(f"DELETE FROM {CHUNK} WHERE document_id = %s", [document_id])
        return cursor.rowcount
