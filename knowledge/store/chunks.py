"""Chunk and vector writes of the canonical store (what the write service and the reindex call)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.db import connection, transaction

from knowledge.models import Chunk
from knowledge.store.lookups import LOOKUPS
from knowledge.store.sql import CHUNK, EMBEDDING, vector_literal
from knowledge.store.tables import TERMS
from retrieval_backends.types import (
    HALFVEC_SUFFIX,
    ChunkInput,
    EmbeddingUpdate,
    StoredChunk,
    validate_dimensions,
)

INSERT_CHUNKS = f"""
INSERT INTO {CHUNK}
    (document_id, chunk_index, parent_index, content, token_count, language, tenant_id, connector_id,
     environment_id, is_deleted, acl_tokens, page, search_vector, lexeme_count)
SELECT u.document_id, u.chunk_index, u.parent_index, u.content, u.token_count, u.language, u.tenant_id,
       u.connector_id, u.environment_id, u.is_deleted,
       ARRAY(SELECT jsonb_array_elements_text(u.acl::jsonb))::varchar[],
       u.page,
       v.vector,
       coalesce((SELECT sum(array_length(positions, 1)) FROM unnest(v.vector)), 0)
FROM unnest(%s::bigint[], %s::int[], %s::int[], %s::text[], %s::int[], %s::text[], %s::bigint[],
            %s::bigint[], %s::bigint[], %s::bool[], %s::text[], %s::int[])
     AS u(document_id, chunk_index, parent_index, content, token_count, language, tenant_id,
          connector_id, environment_id, is_deleted, acl, page)
CROSS JOIN LATERAL (SELECT to_tsvector(u.language::regconfig, u.content) AS vector) v
RETURNING id, document_id, chunk_index
"""


# Term rows (df 0 until the statistics trigger counts the chunks) for every lexeme of the chunks, so
# the weights trigger finds a number for each; one statement in lexeme order, so concurrent writers
# wait for each other's new terms in the same order rather than deadlock.
INSERT_TERMS = f"""
INSERT INTO {TERMS} (tenant_id, language, lexeme, df)
SELECT DISTINCT u.tenant_id, u.language, lex.lexeme, 0
FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS u(tenant_id, language, content),
     unnest(tsvector_to_array(to_tsvector(u.language::regconfig, u.content))) AS lex(lexeme)
ORDER BY 1, 2, 3
ON CONFLICT (tenant_id, language, lexeme) DO NOTHING
"""


def insert_chunks(chunks: Sequence[ChunkInput]) -> list[StoredChunk]:
    """Insert chunks in one statement with their tsvectors and lexeme counts (BM25 statistics follow
    by trigger, BM25 weights by the row trigger once their terms exist); returns them in input
    order, with ids."""
    if not chunks:
        return []
    LOOKUPS.written()
    columns: list[Any] = [
        [c.document_id for c in chunks],
        [c.chunk_index for c in chunks],
        [c.parent_index for c in chunks],
        [c.content for c in chunks],
        [c.token_count for c in chunks],
        [c.language for c in chunks],
        [c.tenant_id for c in chunks],
        [c.connector_id for c in chunks],
        [c.environment_id for c in chunks],
        [c.is_deleted for c in chunks],
        [json.dumps(list(c.acl_tokens)) for c in chunks],
        [c.page for c in chunks],
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        terms: list[Any] = [[c.tenant_id for c in chunks], [c.language for c in chunks]]
        cursor.execute(INSERT_TERMS, [*terms, [c.content for c in chunks]])
        cursor.execute(INSERT_CHUNKS, columns)
        ids = {(doc, index): pk for pk, doc, index in cursor.fetchall()}
    return [
        StoredChunk(
            id=ids[(c.document_id, c.chunk_index)],
            document_id=c.document_id,
            chunk_index=c.chunk_index,
            content=c.content,
            parent_index=c.parent_index,
            token_count=c.token_count,
        )
        for c in chunks
    ]


# The chunk row is read FOR SHARE: an ACL change (which updates the chunk row first, then its vectors,
# in one transaction) either finishes before this copy reads the chunk, or waits for it and then
# corrects the new vector too. ON CONFLICT refreshes the copied filters as well as the vector.
UPSERT_EMBEDDINGS = f"""
INSERT INTO {EMBEDDING}
    (chunk_id, model, dimensions, embedding, embedding_half, tenant_id, connector_id, environment_id,
     is_deleted, acl_tokens, created_at)
SELECT c.id, u.model, %s,
       CASE WHEN u.model NOT LIKE '%%{HALFVEC_SUFFIX}' THEN u.vec::vector END,
       CASE WHEN u.model LIKE '%%{HALFVEC_SUFFIX}' THEN u.vec::halfvec END,
       c.tenant_id, c.connector_id, c.environment_id, c.is_deleted, c.acl_tokens, now()
FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS u(chunk_id, model, vec)
JOIN {CHUNK} c ON c.id = u.chunk_id
ORDER BY c.id
FOR SHARE OF c
ON CONFLICT (chunk_id, model) DO UPDATE
    SET embedding = EXCLUDED.embedding, embedding_half = EXCLUDED.embedding_half,
        dimensions = EXCLUDED.dimensions,
        tenant_id = EXCLUDED.tenant_id, connector_id = EXCLUDED.connector_id,
        environment_id = EXCLUDED.environment_id, is_deleted = EXCLUDED.is_deleted,
        acl_tokens = EXCLUDED.acl_tokens
"""


def index_embeddings(updates: Sequence[EmbeddingUpdate], dimensions: int) -> int:
    """Upsert vectors (one per chunk and model); filter columns are copied from the chunk in the same
    statement. Vectors of other dimensions stay. Returns the count written.

    :raises ValueError: when a vector's length differs from `dimensions` or it cannot be stored.
    """
    validate_dimensions(updates, dimensions)
    if not updates:
        return 0
    LOOKUPS.written()
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
    """Delete a document's vectors and chunks; returns the number of chunks deleted. Idempotent."""
    return delete_documents_chunks([document_id])


def delete_documents_chunks(document_ids: Sequence[int]) -> int:
    """Delete the vectors and chunks of many documents in two statements; returns the chunks deleted."""
    ids = list(document_ids)
    if not ids:
        return 0
    LOOKUPS.written()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {EMBEDDING} WHERE chunk_id IN (SELECT id FROM {CHUNK} WHERE document_id = ANY(%s))",
            [ids],
        )
        cursor.execute(f"DELETE FROM {CHUNK} WHERE document_id = ANY(%s)", [ids])
        return cursor.rowcount


def count_document_chunks(document_id: int) -> int:
    """How many chunks the document has."""
    return Chunk.objects.filter(document_id=document_id).count()


def lock_chunk_writes() -> None:
    """Block chunk inserts, updates and deletes until the caller's transaction ends (a reindex switch)."""
    with connection.cursor() as cursor:
        cursor.execute(f"LOCK TABLE {CHUNK} IN SHARE MODE")
