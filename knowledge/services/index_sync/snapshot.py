"""The absolute state of documents as an index must mirror it, read in one consistent snapshot."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection, transaction

from knowledge.models import Chunk, Document
from knowledge.services.acl import document_grants, tokens_for
from retrieval_backends.types import DocumentState, MirroredChunk


@dataclass(frozen=True)
class Snapshot:
    """Document states and the `index_version` each was read at (what a push may mark clean)."""

    states: list[DocumentState]
    versions: dict[int, int]
    clean: set[int]  # documents whose version read was already pushed


def _chunks(document_ids: list[int]) -> dict[int, list[MirroredChunk]]:
    """Every chunk of the documents with all their vectors, in chunk order."""
    vectors: dict[int, dict[str, tuple[float, ...]]] = defaultdict(dict)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT e.chunk_id, e.model, e.embedding::text FROM knowledge_chunkembedding e "
            "JOIN knowledge_chunk c ON c.id = e.chunk_id WHERE c.document_id = ANY(%s)",
            [document_ids],
        )
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


def read_snapshot(*, document_ids: Sequence[int], with_chunks: bool) -> Snapshot:
    """The documents' states (and chunks) as of one instant: a repeatable-read transaction, so the
    version read is the version of everything read with it."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:  # inside a caller's transaction its own isolation applies
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        rows = list(
            Document.objects.filter(pk__in=document_ids).values_list(
                *("pk", "tenant_id", "connector_id", "environment_id", "is_public", "deleted_at", "title"),
                "synced_version",
                "index_version",
            )
        )
        ids = [r[0] for r in rows]
        grants, kinds = document_grants(ids)
        chunks = _chunks(ids) if with_chunks else {}
    states = [
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
        for pk, tenant_id, connector_id, environment_id, is_public, deleted_at, title, _, version in rows
    ]
    clean = {r[0] for r in rows if r[-2] >= r[-1]}
    return Snapshot(states=states, versions={r[0]: r[-1] for r in rows}, clean=clean)
