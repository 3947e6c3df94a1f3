"""Search bodies: the scope as filters inside each lane's query (never a post-filter on a top-k)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from retrieval_backends.opensearch.mappings import as_bytes, text_fields
from retrieval_backends.types import LaneHit, SearchScope, vector_storage

SOURCE = ["chunk_id", "document_id", "chunk_index"]


def scope_filters(scope: SearchScope) -> list[dict[str, Any]]:
    """Tenant, connectors, environment (or none), ACL tokens (unless bypassed) and not deleted."""
    clauses: list[dict[str, Any]] = [
        {"term": {"tenant_id": scope.tenant_id}},
        {"term": {"is_deleted": False}},
    ]
    if scope.connector_ids is not None:
        clauses.append({"terms": {"connector_id": list(scope.connector_ids)}})
    if scope.environment_id is not None:
        either = [
            {"term": {"environment_id": scope.environment_id}},
            {"bool": {"must_not": {"exists": {"field": "environment_id"}}}},
        ]
        clauses.append({"bool": {"should": either, "minimum_should_match": 1}})
    if not scope.bypass_acl:
        clauses.append({"terms": {"acl_tokens": sorted(scope.principal_tokens)}})
    return clauses


def vector_body(
    scope: SearchScope, vector: Sequence[float], limit: int, model: str | None, timeout_ms: int
) -> dict[str, Any]:
    filters = scope_filters(scope)
    if model is not None:
        filters.append({"term": {"model": model}})
    # The filter sits inside the knn clause (lucene's efficient filtering): k results that pass it.
    values = as_bytes(vector) if vector_storage(model) == "halfvec" else [float(v) for v in vector]
    knn = {"vector": values, "k": limit, "filter": {"bool": {"filter": filters}}}
    return {
        "size": limit,
        "_source": SOURCE,
        "timeout": f"{timeout_ms}ms",
        "query": {"knn": {"vector": knn}},
    }


def keyword_body(
    scope: SearchScope, query_text: str, languages: Sequence[str], limit: int, timeout_ms: int
) -> dict[str, Any]:
    fields = sorted({name for language in languages for name in text_fields(language)})
    match = {"multi_match": {"query": query_text, "fields": fields, "operator": "or", "type": "best_fields"}}
    return {
        "size": limit,
        "_source": SOURCE,
        "timeout": f"{timeout_ms}ms",
        "query": {
            "bool": {
                "must": [match],
                "filter": [*scope_filters(scope), {"terms": {"language": list(languages)}}],
            }
        },
    }


def to_hits(response: dict[str, Any], *, cosine_from_lucene: bool = False) -> list[LaneHit]:
    """Ids and scores only; everything else is rehydrated from PostgreSQL by canonical verification.
    Lucene's cosinesimil score is (1 + cos) / 2; the vector lane reports the cosine itself."""
    hits = []
    for hit in response["hits"]["hits"]:
        source, score = hit.get("_source") or {}, float(hit.get("_score") or 0.0)
        hits.append(
            LaneHit(
                chunk_id=int(source["chunk_id"]),
                document_id=int(source["document_id"]),
                chunk_index=int(source["chunk_index"]),
                score=2.0 * score - 1.0 if cosine_from_lucene else score,
            )
        )
    hits.sort(key=lambda h: (-h.score, h.chunk_id))
    return hits
