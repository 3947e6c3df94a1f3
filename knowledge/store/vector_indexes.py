"""Per-tenant HNSW indexes: one partial index per tenant, dimension and storage that outgrows exact scans.

Tenants share the vector table. One HNSW graph per dimension made every tenant's filtered search walk
a graph mostly of other tenants' vectors: a 6,657-vector tenant in a 113k-vector graph needed 20x the
candidates for the same recall, and the p95 followed. A partial index `WHERE tenant_id = T AND
dimensions = D` is the graph that tenant would have alone; its vectors' rows are found by the planner
from the literal tenant and dimension in the lane's query. The index's name carries what it covers
(`chunk_embedding_hnsw_t<tenant>_d<dimensions>[_half]`), so the catalog is the record of which exist;
an index whose concurrent build failed stays in the catalog as invalid and is dropped and built again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import connection

from knowledge.store.tables import EMBEDDING
from retrieval_backends.types import HALFVEC_SUFFIX

PREFIX = "chunk_embedding_hnsw_t"
NAME = re.compile(rf"^{PREFIX}(\d+)_d(\d+)(_half)?$")
HNSW_OPTIONS = "m = 16, ef_construction = 64"
STORAGES = ("vector", "halfvec")
MAX_DIMENSIONS = {"vector": 2000, "halfvec": 4000}  # pgvector's HNSW limits
# Per vector in a build held in memory: the vector, its neighbour lists and bookkeeping (pgvector's
# in-memory graph); a build that does not fit continues much more slowly on disk.
BUILD_BYTES_OVERHEAD = 400
MAX_BUILD_MEMORY_MB = 4096


@dataclass(frozen=True, order=True)
class VectorSpace:
    """One tenant's vectors of one dimension and storage: what one per-tenant index covers."""

    tenant_id: int
    dimensions: int
    storage: str = "vector"

    @property
    def index_name(self) -> str:
        return f"{PREFIX}{self.tenant_id}_d{self.dimensions}" + ("_half" if self.storage == "halfvec" else "")

    @property
    def indexable(self) -> bool:
        return 0 < self.dimensions <= MAX_DIMENSIONS[self.storage]

    @classmethod
    def from_index_name(cls, name: str) -> VectorSpace | None:
        match = NAME.match(name)
        if match is None:
            return None
        return cls(int(match[1]), int(match[2]), "halfvec" if match[3] else "vector")


@dataclass(frozen=True)
class TenantIndex:
    space: VectorSpace
    valid: bool
    bytes: int


def column_and_cast(storage: str, dimensions: int) -> tuple[str, str, str]:
    """(column, typed cast, operator class) of a storage's vectors."""
    if storage == "halfvec":
        return "embedding_half", f"halfvec({int(dimensions)})", "halfvec_cosine_ops"
    return "embedding", f"vector({int(dimensions)})", "vector_cosine_ops"


STORAGE_OF_MODEL = f"CASE WHEN model LIKE '%%{HALFVEC_SUFFIX}' THEN 'halfvec' ELSE 'vector' END"
COUNTS = f"""
SELECT tenant_id, dimensions, {STORAGE_OF_MODEL} AS storage, count(*)
FROM {EMBEDDING} GROUP BY 1, 2, 3
"""
EXISTING = f"""
SELECT c.relname, i.indisvalid AND i.indisready, pg_relation_size(c.oid)
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = '{EMBEDDING}'::regclass AND c.relname LIKE '{PREFIX}%%'
"""


def vector_counts() -> dict[VectorSpace, int]:
    """Rows per tenant, dimension and storage (deleted ones too: an index holds them as well)."""
    with connection.cursor() as cursor:
        cursor.execute(COUNTS)
        return {VectorSpace(int(t), int(d), str(s)): int(n) for t, d, s, n in cursor.fetchall()}


def tenant_indexes() -> dict[str, TenantIndex]:
    """Every per-tenant index in the catalog by name, valid or not."""
    with connection.cursor() as cursor:
        cursor.execute(EXISTING)
        rows = cursor.fetchall()
    found = {}
    for name, valid, size in rows:
        space = VectorSpace.from_index_name(name)
        if space is not None:
            found[name] = TenantIndex(space, bool(valid), int(size))
    return found


def valid_spaces() -> frozenset[VectorSpace]:
    """The spaces whose index the planner may use now."""
    return frozenset(index.space for index in tenant_indexes().values() if index.valid)


def build_memory_mb(rows: int, dimensions: int, storage: str) -> int:
    """maintenance_work_mem that holds the whole graph of `rows` vectors (bounded)."""
    per_vector = dimensions * (2 if storage == "halfvec" else 4) + BUILD_BYTES_OVERHEAD
    return int(min(MAX_BUILD_MEMORY_MB, max(64, rows * per_vector * 1.3 / 2**20)))


def create_index(space: VectorSpace, *, rows: int, concurrently: bool) -> None:
    """Build the space's index. Concurrently (outside a transaction) writes go on meanwhile."""
    column, cast, opclass = column_and_cast(space.storage, space.dimensions)
    mode = "CONCURRENTLY " if concurrently else ""
    sql = (
        f"CREATE INDEX {mode}IF NOT EXISTS {space.index_name} ON {EMBEDDING} "
        f"USING hnsw (({column}::{cast}) {opclass}) WITH ({HNSW_OPTIONS}) "
        f"WHERE tenant_id = {int(space.tenant_id)} AND dimensions = {int(space.dimensions)}"
    )
    memory = build_memory_mb(rows, space.dimensions, space.storage)
    inside = connection.in_atomic_block
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT set_config('maintenance_work_mem', '{memory}MB', {str(inside).lower()})")
        if inside:  # CREATE INDEX refuses pending (deferred) foreign-key checks
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(sql)
        cursor.execute("SET CONSTRAINTS ALL DEFERRED" if inside else "RESET maintenance_work_mem")


def drop_index(name: str, *, concurrently: bool) -> None:
    if VectorSpace.from_index_name(name) is None:
        raise ValueError(f"{name!r} is not a per-tenant vector index")
    mode = "CONCURRENTLY " if concurrently else ""
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {mode}IF EXISTS {name}")
