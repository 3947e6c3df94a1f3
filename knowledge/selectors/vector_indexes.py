"""Per-tenant vector indexes as an operator sees them: each tenant's vectors and its graph's state."""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.models import Tenant
from knowledge.store import vector_indexes as store


@dataclass(frozen=True)
class SpaceState:
    tenant: str
    space: store.VectorSpace
    vectors: int
    state: str  # ready | invalid | missing | not needed | orphaned
    index_bytes: int


def vector_index_states(*, min_vectors: int) -> list[SpaceState]:
    """One row per tenant space with vectors or an index, biggest first."""
    counts = store.vector_counts()
    indexes = {index.space: index for index in store.tenant_indexes().values()}
    slugs = dict(Tenant.objects.values_list("pk", "slug"))
    rows = []
    for space in set(counts) | set(indexes):
        vectors, index = counts.get(space, 0), indexes.get(space)
        if index is not None:
            state = "ready" if index.valid else "invalid"
            state = "orphaned" if space.tenant_id not in slugs else state
        else:
            state = "missing" if vectors > min_vectors and space.indexable else "not needed"
        tenant = slugs.get(space.tenant_id, f"#{space.tenant_id}")
        rows.append(SpaceState(tenant, space, vectors, state, index.bytes if index else 0))
    return sorted(rows, key=lambda r: (-r.vectors, r.space))
