"""Index writes: absolute document states through the bulk API, then their stale chunks removed.

A push indexes every current chunk (and vector) of the documents under their canonical ids, then
deletes whatever else the index holds for those documents, so pushing twice is harmless and a push
never blanks a field. Failures are reported per document.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

from opensearchpy import OpenSearch

from retrieval_backends.opensearch.client import call
from retrieval_backends.opensearch.mappings import Names, chunks_body, model_key, text_fields, vectors_body
from retrieval_backends.types import DocumentState, MirroredChunk

MAX_ACTIONS = 500  # documents per bulk request (each ~4 KB with a 384-d vector)


class IndexTargets:
    """Which physical or alias names writes go to (aliases normally; a new generation on a rebuild)."""

    def __init__(self, names: Names, generation: int | None = None) -> None:
        self.names, self.generation = names, generation

    def chunks(self) -> str:
        alias = self.names.chunks
        return alias if self.generation is None else self.names.physical(alias, self.generation)

    def vectors(self, dimensions: int) -> str:
        alias = self.names.vectors(dimensions)
        return alias if self.generation is None else self.names.physical(alias, self.generation)


def ensure_index(
    client: OpenSearch, names: Names, alias: str, body: dict[str, Any], generation: int = 1
) -> None:
    """Create `alias` over a first physical index when it does not exist yet (idempotent)."""
    if call(lambda: client.indices.exists_alias(name=alias), "exists_alias"):
        return
    physical = names.physical(alias, generation)
    created = call(lambda: client.indices.exists(index=physical), "exists")
    if not created:
        call(lambda: client.indices.create(index=physical, body=body, ignore=400), "create index")
    call(lambda: client.indices.put_alias(index=physical, name=alias), "put_alias")


def body_for(names: Names, alias: str) -> dict[str, Any]:
    dimensions = names.dimensions_of(alias)
    return chunks_body() if dimensions is None else vectors_body(dimensions)


def _filters(state: DocumentState, chunk: MirroredChunk) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "chunk_id": chunk.chunk_id,
        "document_id": state.document_id,
        "chunk_index": chunk.chunk_index,
        "tenant_id": state.tenant_id,
        "connector_id": state.connector_id,
        "acl_tokens": list(state.acl_tokens),
        "is_deleted": state.is_deleted,
        "language": chunk.language,
    }
    if state.environment_id is not None:
        fields["environment_id"] = state.environment_id
    return fields


def document_actions(
    state: DocumentState, targets: IndexTargets
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(index, id, source) of every document the index must hold for this state."""
    for chunk in state.chunks or ():
        title_field, text_field = text_fields(chunk.language)
        source = {**_filters(state, chunk), title_field: state.title, text_field: chunk.content}
        yield targets.chunks(), str(chunk.chunk_id), source
        for model, vector in sorted(chunk.vectors.items()):
            vector_source = {**_filters(state, chunk), "model": model, "vector": list(vector)}
            yield targets.vectors(len(vector)), f"{chunk.chunk_id}.{model_key(model)}", vector_source


def _bulk_lines(actions: Sequence[tuple[str, str, dict[str, Any]]]) -> str:
    lines = []
    for index, doc_id, source in actions:
        lines.append(json.dumps({"index": {"_index": index, "_id": doc_id}}))
        lines.append(json.dumps(source))
    return "\n".join(lines) + "\n"


def _bulk(
    client: OpenSearch, actions: list[tuple[str, str, dict[str, Any]]], owners: list[int]
) -> dict[int, str]:
    """Send actions in bounded requests; document id -> first error of its items."""
    failures: dict[int, str] = {}
    for start in range(0, len(actions), MAX_ACTIONS):
        lines = _bulk_lines(actions[start : start + MAX_ACTIONS])
        response: dict[str, Any] = call(partial(client.bulk, body=lines), "bulk")
        if not response.get("errors"):
            continue
        for owner, item in zip(owners[start : start + MAX_ACTIONS], response["items"], strict=True):
            result = next(iter(item.values()))
            if result.get("error") and owner not in failures:
                failures[owner] = json.dumps(result["error"])[:500]
    return failures


def push_states(
    client: OpenSearch, names: Names, states: Sequence[DocumentState], targets: IndexTargets | None = None
) -> dict[int, str]:
    """Make the index hold exactly these documents' chunks and vectors; per-document failures."""
    targets = targets or IndexTargets(names)
    actions: list[tuple[str, str, dict[str, Any]]] = []
    owners: list[int] = []
    keep: dict[str, list[str]] = defaultdict(list)
    for state in states:
        for index, doc_id, source in document_actions(state, targets):
            actions.append((index, doc_id, source))
            owners.append(state.document_id)
            keep[index].append(doc_id)
    _ensure_targets(client, names, targets, {index for index, _, _ in actions})
    failures = _bulk(client, actions, owners)
    pushed = [s.document_id for s in states if s.document_id not in failures]
    if pushed:
        _drop_stale(client, names, targets, pushed, keep)
    return failures


def _ensure_targets(client: OpenSearch, names: Names, targets: IndexTargets, indices: set[str]) -> None:
    if targets.generation is not None:
        return  # a rebuild creates its generation's indices itself
    for alias in sorted(indices | {names.chunks}):
        ensure_index(client, names, alias, body_for(names, alias))


def _drop_stale(
    client: OpenSearch,
    names: Names,
    targets: IndexTargets,
    document_ids: list[int],
    keep: dict[str, list[str]],
) -> None:
    """Delete what the index holds for these documents beyond what was just written."""
    indices = existing_indices(client, names, targets)
    for index in indices:
        query: dict[str, Any] = {"filter": [{"terms": {"document_id": document_ids}}]}
        if keep.get(index):
            query["must_not"] = [{"ids": {"values": keep[index]}}]
        delete = partial(
            client.delete_by_query, index=index, body={"query": {"bool": query}}, conflicts="proceed"
        )
        call(delete, "delete_by_query")


def aliases(client: OpenSearch, names: Names) -> dict[str, str]:
    """alias -> physical index, for this prefix's chunk and vector aliases."""
    rows = call(lambda: client.cat.aliases(name=f"{names.prefix}-*", format="json"), "cat aliases")
    return {
        row["alias"]: row["index"]
        for row in rows
        if row["alias"] == names.chunks or names.dimensions_of(row["alias"]) is not None
    }


def existing_indices(client: OpenSearch, names: Names, targets: IndexTargets) -> list[str]:
    """The chunk index and every vector index the targets write to."""
    if targets.generation is None:
        return sorted(aliases(client, names))
    pattern = f"{names.prefix}-*-g{targets.generation}"
    found = call(lambda: client.indices.get(index=pattern, ignore=404), "get indices")
    return sorted(k for k in found if k not in {"error", "status"})


def delete_documents(client: OpenSearch, names: Names, document_ids: Sequence[int]) -> dict[int, str]:
    """Remove every chunk and vector of these documents (idempotent)."""
    indices = existing_indices(client, names, IndexTargets(names))
    if not indices or not document_ids:
        return {}
    body = {"query": {"terms": {"document_id": list(document_ids)}}}
    call(
        lambda: client.delete_by_query(
            index=",".join(indices), body=body, conflicts="proceed", refresh=False
        ),
        "delete_by_query",
    )
    return {}
