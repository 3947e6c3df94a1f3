"""Blue/green generations: a rebuild fills new physical indices, then every alias swaps at once."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from opensearchpy import OpenSearch

from retrieval_backends.opensearch.client import call
from retrieval_backends.opensearch.mappings import Names, chunks_body, vectors_body
from retrieval_backends.opensearch.writes import aliases


def _physical_indices(client: OpenSearch, names: Names) -> list[str]:
    found = call(lambda: client.indices.get(index=f"{names.prefix}-*-g*", ignore=404), "get indices")
    return sorted(k for k in found if k not in {"error", "status"})


def start(client: OpenSearch, names: Names, dimensions: Sequence[int], storages: Sequence[str]) -> int:
    """Create the next generation's (empty) indices; returns its number."""
    generation = 1 + max((names.generation_of(i) for i in _physical_indices(client, names)), default=0)
    targets = [(names.chunks, chunks_body())] + [
        (names.vectors(d, s), vectors_body(d, s))
        for d in sorted(set(dimensions))
        for s in sorted(set(storages))
    ]
    for alias, body in targets:
        physical = names.physical(alias, generation)
        call(partial(client.indices.create, index=physical, body=body), "create index")
    return generation


def activate(client: OpenSearch, names: Names, generation: int) -> None:
    """Point every alias at this generation in one atomic call, then drop the older generations."""
    current = aliases(client, names)
    new = [i for i in _physical_indices(client, names) if names.generation_of(i) == generation]
    actions: list[dict[str, dict[str, str]]] = []
    for physical in new:
        alias = physical.rsplit("-g", 1)[0]
        if alias in current:
            actions.append({"remove": {"index": current[alias], "alias": alias}})
        actions.append({"add": {"index": physical, "alias": alias}})
    for alias, physical in current.items():  # a dimension the new generation no longer holds
        if names.physical(alias, generation) not in new:
            actions.append({"remove": {"index": physical, "alias": alias}})
    call(lambda: client.indices.update_aliases(body={"actions": actions}), "update_aliases")
    for old in _physical_indices(client, names):
        if names.generation_of(old) != generation:
            call(partial(client.indices.delete, index=old, ignore=404), "delete index")


def abandon(client: OpenSearch, names: Names, generation: int) -> None:
    """Drop a generation that was never activated (a failed rebuild)."""
    for physical in _physical_indices(client, names):
        if names.generation_of(physical) == generation and physical not in aliases(client, names).values():
            call(partial(client.indices.delete, index=physical, ignore=404), "delete index")


def tenant_counts(client: OpenSearch, names: Names) -> dict[int, int]:
    """Chunks the index holds per tenant."""
    if names.chunks not in aliases(client, names):
        return {}
    body = {"size": 0, "aggs": {"tenants": {"terms": {"field": "tenant_id", "size": 10000}}}}
    response = call(lambda: client.search(index=names.chunks, body=body), "count per tenant")
    return {int(b["key"]): int(b["doc_count"]) for b in response["aggregations"]["tenants"]["buckets"]}


def doctor_checks(client: OpenSearch, names: Names) -> list[tuple[str, str, str, str]]:
    """The cluster's health (the doctor compares the index's counts with PostgreSQL's itself)."""
    health = call(lambda: client.cluster.health(), "cluster health")
    status = "OK" if health["status"] == "green" else "WARN" if health["status"] == "yellow" else "FAIL"
    message = f"cluster {health['cluster_name']} is {health['status']} ({health['number_of_nodes']} node(s))"
    return [(status, "opensearch", message, "" if status == "OK" else "see _cluster/health")]
