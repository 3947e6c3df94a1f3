"""Replaces documents' chunks and vectors through the retrieval backend, many documents per statement."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from django.db import transaction

from knowledge.models import Document
from knowledge.pipeline.chunkers.base import ChunkText
from knowledge.pipeline.embedders.base import CLIENT_MODEL
from knowledge.services.access import schedule_index_sync
from knowledge.store.chunks import delete_document_chunks, index_embeddings, insert_chunks
from retrieval_backends.types import ChunkInput, EmbeddingUpdate

__all__ = ["CLIENT_MODEL", "PreparedChunks", "chunks_replace"]


@dataclass(frozen=True)
class PreparedChunks:
    """A document with its freshly chunked text and one vector per chunk."""

    document: Document
    acl_tokens: tuple[str, ...]
    chunks: Sequence[ChunkText]
    vectors: Sequence[Sequence[float]]
    is_new: bool = False


def _page(chunk: ChunkText) -> int | None:
    page = chunk.metadata.get("page")
    return page if isinstance(page, int) and page > 0 else None


def _inputs(item: PreparedChunks) -> list[ChunkInput]:
    document = item.document
    return [
        ChunkInput(
            document_id=document.pk,
            chunk_index=c.index,
            parent_index=c.parent_index,
            content=c.text,
            token_count=c.token_count,
            language=document.language,
            tenant_id=document.tenant_id,
            connector_id=document.connector_id,
            environment_id=document.environment_id,
            is_deleted=document.deleted_at is not None,
            acl_tokens=item.acl_tokens,
            page=_page(c),
        )
        for c in item.chunks
    ]


# Chunks are inserted this many per statement (several statements, one transaction): the statement's
# arrays and vector literals of a document near the size limit are never built all at once.
INSERT_SLICE = 512


@transaction.atomic
def chunks_replace(*, prepared: Sequence[PreparedChunks], model: str) -> int:
    """Swap every document's old chunks for the new ones in one transaction; returns chunks written."""
    for item in prepared:
        if not item.is_new:
            delete_document_chunks(item.document.pk)
    written = 0
    for inputs, vectors in _slices(prepared):
        written += _insert(inputs, vectors, model)
    schedule_index_sync([item.document.pk for item in prepared])
    return written


def _slices(
    prepared: Sequence[PreparedChunks],
) -> Iterator[tuple[list[ChunkInput], list[Sequence[float]]]]:
    inputs: list[ChunkInput] = []
    vectors: list[Sequence[float]] = []
    for item in prepared:
        for chunk, vector in zip(_inputs(item), item.vectors, strict=True):
            inputs.append(chunk)
            vectors.append(vector)
            if len(inputs) == INSERT_SLICE:
                yield inputs, vectors
                inputs, vectors = [], []
    if inputs:
        yield inputs, vectors


def _insert(inputs: list[ChunkInput], vectors: list[Sequence[float]], model: str) -> int:
    stored = insert_chunks(inputs)
    by_dimension: dict[int, list[EmbeddingUpdate]] = defaultdict(list)
    for chunk, vector in zip(stored, vectors, strict=True):
        by_dimension[len(vector)].append(
            EmbeddingUpdate(chunk_id=chunk.id, vector=tuple(vector), model=model)
        )
    for dimensions, updates in by_dimension.items():
        index_embeddings(updates, dimensions)
    return len(stored)
