"""Index writes: absolute document states through the bulk API, versioned, then stale entries removed.

Pushes of one document may finish in any order (two workers, a slow request, a retry), so every write
carries the document's version (`DocumentState.version`, its `index_version`) as OpenSearch's
external version (`version_type=external_gte`), and the index itself refuses an older write over a
newer one:

1. One bulk request writes, per document, a marker (`_id` `doc-<id>` in the chunk index, no tenant, so
   no search ever matches it) and every current chunk and vector, each at the document's version and
   with it in `doc_version`. A version conflict means a newer push already wrote there: fine.
2. The written indices are refreshed, so the cleanup's query sees what any push wrote, and the
   markers are read back (a real-time GET): a marker above this push's version means a newer push (or
   a deletion) owns the document now.
3. One delete-by-query removes, per document, every entry whose `doc_version` is below the marker's
   version: whatever this push or an older one wrote that the newest state does not hold (and entries
   written before versions existed). Entries of the newest push carry its version and stay.

A deletion writes the marker at the tombstone's version (above any push of the document) and removes
every entry below it, so an older push that lands afterwards is cleaned up by its own step 3. Pushing
twice is harmless, a push never blanks a field, and failures are reported per document.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import orjson
from opensearchpy import OpenSearch

from retrieval_backends.opensearch.client import call
from retrieval_backends.opensearch.mappings import (
    ADDED_FIELDS,
    MARKER_FIELDS,
    Names,
    as_bytes,
    chunks_body,
    model_key,
    text_fields,
    vectors_body,
)
from retrieval_backends.types import DocumentState, MirroredChunk, vector_storage

MAX_ACTIONS = 500  # documents per bulk request (each ~4 KB with a 384-d vector)
# Documents per delete-by-query. Each document's condition is five clauses (bool, term, range, bool,
# exists), and OpenSearch counts every nested clause against its limit of 1,024: 500 documents (2,500
# clauses) failed the whole push, 200 was 24 clauses short of failing.
MAX_CLAUSES = 100


class IndexTargets:
    """Which physical or alias names writes go to (aliases normally; a new generation on a rebuild)."""

    def __init__(self, names: Names, generation: int | None = None) -> None:
        self.names, self.generation = names, generation

    def chunks(self) -> str:
        alias = self.names.chunks
        return alias if self.generation is None else self.names.physical(alias, self.generation)

    def vectors(self, dimensions: int, storage: str = "vector") -> str:
        alias = self.names.vectors(dimensions, storage)
        return alias if self.generation is None else self.names.physical(alias, self.generation)


_upgraded: set[tuple[str, str]] = set()  # (cluster, alias) whose mapping has every added field


def ensure_index(
    client: OpenSearch, names: Names, alias: str, body: dict[str, Any], generation: int = 1
) -> None:
    """Create `alias` over a first physical index when it does not exist yet (idempotent); an older
    index gets the fields added since (once per process)."""
    if call(lambda: client.indices.exists_alias(name=alias), "exists_alias"):
        key = (str(client.transport.hosts), alias)
        if key not in _upgraded:
            fields = {**ADDED_FIELDS, **(MARKER_FIELDS if names.dimensions_of(alias) is None else {})}
            call(lambda: client.indices.put_mapping(index=alias, body={"properties": fields}), "put_mapping")
            _upgraded.add(key)
        return
    physical = names.physical(alias, generation)
    created = call(lambda: client.indices.exists(index=physical), "exists")
    if not created:
        call(lambda: client.indices.create(index=physical, body=body, ignore=400), "create index")
    call(lambda: client.indices.put_alias(index=physical, name=alias), "put_alias")


def body_for(names: Names, alias: str) -> dict[str, Any]:
    space = names.space_of(alias)
    return chunks_body() if space is None else vectors_body(*space)


def marker_id(document_id: int) -> str:
    return f"doc-{document_id}"


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
        "doc_version": state.version,
    }
    if state.environment_id is not None:
        fields["environment_id"] = state.environment_id
    return fields


Action = tuple[str, str, dict[str, Any], int]  # index, id, source, version


def document_actions(state: DocumentState, targets: IndexTargets) -> Iterator[Action]:
    """(index, id, source, version) of the marker and every entry the index must hold for this state."""
    version = state.version
    yield targets.chunks(), marker_id(state.document_id), marker(state.document_id, version), version
    for chunk in state.chunks or ():
        title_field, text_field = text_fields(chunk.language)
        source = {**_filters(state, chunk), title_field: state.title, text_field: chunk.content}
        yield targets.chunks(), str(chunk.chunk_id), source, version
        for model, vector in sorted(chunk.vectors.items()):
            storage = vector_storage(model)
            values = as_bytes(vector) if storage == "halfvec" else list(vector)
            vector_source = {**_filters(state, chunk), "model": model, "vector": values}
            index = targets.vectors(len(vector), storage)
            yield index, f"{chunk.chunk_id}.{model_key(model)}", vector_source, version


def marker(document_id: int, version: int) -> dict[str, Any]:
    return {"marker_of": document_id, "doc_version": version}


def _bulk_lines(actions: Sequence[Action]) -> bytes:
    # orjson: the vectors' floats made json.dumps a tenth of a push's time.
    lines = []
    for index, doc_id, source, version in actions:
        meta = {"_index": index, "_id": doc_id, "version": version, "version_type": "external_gte"}
        lines.append(orjson.dumps({"index": meta}))
        lines.append(orjson.dumps(source))
    return b"\n".join(lines) + b"\n"


def _bulk(client: OpenSearch, actions: list[Action], owners: list[int]) -> dict[int, str]:
    """Send actions in bounded requests; document id -> first error of its items. A version conflict
    is no error: a newer push of that document wrote the entry."""
    failures: dict[int, str] = {}
    for start in range(0, len(actions), MAX_ACTIONS):
        lines = _bulk_lines(actions[start : start + MAX_ACTIONS])
        response: dict[str, Any] = call(partial(client.bulk, body=lines), "bulk")
        if not response.get("errors"):
            continue
        for owner, item in zip(owners[start : start + MAX_ACTIONS], response["items"], strict=True):
            result = next(iter(item.values()))
            error = result.get("error")
            if error and result.get("status") != 409 and owner not in failures:
                failures[owner] = json.dumps(error)[:500]
    return failures


def push_states(
    client: OpenSearch, names: Names, states: Sequence[DocumentState], targets: IndexTargets | None = None
) -> dict[int, str]:
    """Make the index hold exactly these documents' chunks and vectors (unless a newer version of a
    document is there already); per-document failures."""
    targets = targets or IndexTargets(names)
    actions: list[Action] = []
    owners: list[int] = []
    for state in states:
        for action in document_actions(state, targets):
            actions.append(action)
            owners.append(state.document_id)
    _ensure_targets(client, names, targets, {action[0] for action in actions})
    failures = _bulk(client, actions, owners)
    written = {s.document_id: s.version for s in states if s.document_id not in failures}
    if written:
        _drop_below_markers(client, names, targets, written)
    return failures


def delete_documents(client: OpenSearch, names: Names, deletions: Mapping[int, int]) -> dict[int, str]:
    """Remove every chunk and vector of these documents (document id -> the deletion's version), over
    any older push. Idempotent."""
    targets = IndexTargets(names)
    if not deletions:
        return {}
    _ensure_targets(client, names, targets, set())
    actions = [(targets.chunks(), marker_id(d), marker(d, v), v) for d, v in sorted(deletions.items())]
    failures = _bulk(client, actions, [action[2]["marker_of"] for action in actions])
    done = {d: v for d, v in deletions.items() if d not in failures}
    if done:
        _drop_below_markers(client, names, targets, done)
    return failures


def _ensure_targets(client: OpenSearch, names: Names, targets: IndexTargets, indices: set[str]) -> None:
    if targets.generation is not None:
        return  # a rebuild creates its generation's indices itself
    for alias in sorted(indices | {names.chunks}):
        ensure_index(client, names, alias, body_for(names, alias))


def _drop_below_markers(
    client: OpenSearch, names: Names, targets: IndexTargets, versions: Mapping[int, int]
) -> None:
    """Delete every entry of these documents below the version their marker holds now (at least the
    version just written): what no newest state holds. The refresh first makes every write, this
    push's and any concurrent one's, visible to the query."""
    indices = existing_indices(client, names, targets)
    if not indices:
        return
    joined = ",".join(indices)
    call(lambda: client.indices.refresh(index=joined), "refresh")
    current = _marker_versions(client, targets.chunks(), list(versions))
    clauses = [
        {
            "bool": {
                "filter": [{"term": {"document_id": document_id}}],
                "should": [
                    {"range": {"doc_version": {"lt": max(version, current.get(document_id, 0))}}},
                    {"bool": {"must_not": {"exists": {"field": "doc_version"}}}},
                ],
                "minimum_should_match": 1,
            }
        }
        for document_id, version in sorted(versions.items())
    ]
    for start in range(0, len(clauses), MAX_CLAUSES):
        body = {
            "query": {"bool": {"should": clauses[start : start + MAX_CLAUSES], "minimum_should_match": 1}}
        }
        delete = partial(client.delete_by_query, index=joined, body=body, conflicts="proceed", refresh=True)
        call(delete, "delete_by_query")


def _marker_versions(client: OpenSearch, index: str, document_ids: list[int]) -> dict[int, int]:
    """document id -> the version of its marker (real time: what was just written counts)."""
    body = {"ids": [marker_id(d) for d in document_ids]}
    response = call(lambda: client.mget(index=index, body=body, _source=["marker_of"]), "mget markers")
    found = {}
    for doc in response.get("docs", []):
        if doc.get("found") and doc.get("_source", {}).get("marker_of") is not None:
            found[int(doc["_source"]["marker_of"])] = int(doc["_version"])
    return found


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
