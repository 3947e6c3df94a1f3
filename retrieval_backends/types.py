"""Frozen value objects exchanged between callers and retrieval backends."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

# ACL tokens, the one vocabulary of access the index filters on: `public`, `u:<principal id>` for a
# user, `g:<principal id>` for a group. Built and parsed only here.
PUBLIC_TOKEN = "public"
USER_PREFIX, GROUP_PREFIX = "u:", "g:"

# A stored model key ending in this keeps its vectors at half precision (KNOWLEDGE_VECTOR_STORAGE):
# PostgreSQL's `halfvec` column, an external index's compact encoding.
HALFVEC_SUFFIX = "@halfvec"


def vector_storage(model: str | None) -> str:
    """How a model key's vectors are stored: `halfvec` or `vector`."""
    return "halfvec" if model is not None and model.endswith(HALFVEC_SUFFIX) else "vector"


def principal_token(*, is_user: bool, principal_id: int) -> str:
    """The token chunks carry when this principal is granted access."""
    return f"{USER_PREFIX if is_user else GROUP_PREFIX}{principal_id}"


def principal_ids_of(tokens: Iterable[str]) -> list[int]:
    """The principal ids named by user and group tokens (`public` and anything malformed ignored)."""
    found = []
    for token in tokens:
        number = token[2:]
        if token[:2] in (USER_PREFIX, GROUP_PREFIX) and number.isascii() and number.isdigit():
            found.append(int(number))
    return found


@dataclass(frozen=True, kw_only=True)
class AccessScope:
    """Who is asking, and where: every lane applies it inside its query.

    A scope with no principal tokens and no bypass sees nothing (fail closed).
    `environment_id=None` means every environment; otherwise documents of that environment plus
    documents with no environment.
    """

    tenant_id: int
    principal_tokens: frozenset[str] = frozenset()
    bypass_acl: bool = False
    environment_id: int | None = None

    @property
    def sees_nothing(self) -> bool:
        return not self.bypass_acl and not self.principal_tokens


@dataclass(frozen=True, kw_only=True)
class SearchScope(AccessScope):
    """An access scope narrowed to some connectors (`None` means all of the tenant's connectors)."""

    connector_ids: tuple[int, ...] | None = None

    @property
    def sees_nothing(self) -> bool:
        return super().sees_nothing or self.connector_ids == ()


@dataclass(frozen=True, kw_only=True)
class ChunkInput:
    """A chunk to store, with the denormalised filter fields of its document."""

    document_id: int
    chunk_index: int
    content: str
    tenant_id: int
    connector_id: int
    language: str = "english"
    parent_index: int | None = None
    token_count: int = 0
    environment_id: int | None = None
    is_deleted: bool = False
    acl_tokens: tuple[str, ...] = ()
    page: int | None = None


@dataclass(frozen=True, kw_only=True)
class StoredChunk:
    """A chunk as stored by a backend."""

    id: int
    document_id: int
    chunk_index: int
    content: str
    parent_index: int | None = None
    token_count: int = 0


@dataclass(frozen=True, kw_only=True)
class EmbeddingUpdate:
    """A vector for one chunk from one embedding model."""

    chunk_id: int
    vector: tuple[float, ...]
    model: str


PAGE_UNKNOWN = -1  # a LaneHit's page before anything read it (pages are >= 1, None: unpaged)
PARENT_UNKNOWN = -1  # a LaneHit's parent_index when the backend did not say (chunk indexes are >= 0)


@dataclass(frozen=True, kw_only=True)
class LaneHit:
    """One ranked hit of one lane. External backends fill only ids, index and score.

    `parent_index` is the chunk's parent (None: it has none) when the hit was read from PostgreSQL
    (the PostgreSQL backend's rows, or canonical verification); PARENT_UNKNOWN otherwise.
    """

    chunk_id: int
    document_id: int
    chunk_index: int
    score: float
    content: str | None = None
    title: str | None = None
    source_url: str | None = None
    tenant_id: int | None = None
    parent_index: int | None = PARENT_UNKNOWN
    page: int | None = PAGE_UNKNOWN  # the chunk's page, once hydration or verification read it
    document_external_id: str | None = None  # the document's own id, once hydration or verification read it


@dataclass(frozen=True, kw_only=True)
class MirroredChunk:
    """One chunk as an external index mirrors it, with its vectors by model."""

    chunk_id: int
    chunk_index: int
    content: str
    language: str
    vectors: dict[str, tuple[float, ...]] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class DocumentState:
    """What an external index must mirror about a document: its absolute state, never a delta.

    `chunks` is filled for backends that mirror content (`mirrors_content`); it is then the complete
    set of the document's chunks, so chunks the index holds beyond it are stale and must go.
    `version` is the document's `index_version` when the state was read: an index must never let a
    state of a lower version overwrite or delete what a higher one wrote (pushes may finish in any
    order).
    """

    document_id: int
    tenant_id: int
    connector_id: int
    environment_id: int | None
    acl_tokens: tuple[str, ...]
    is_deleted: bool
    title: str = ""
    chunks: tuple[MirroredChunk, ...] | None = None
    extra: dict[str, object] = field(default_factory=dict)
    version: int = 0


FLOAT32_TINY, FLOAT32_MAX = 1.1754944e-38, 3.4028234e38  # smallest normal and largest 32-bit floats


def vector_problem(values: Sequence[float]) -> str | None:
    """Why a vector cannot be stored and compared by cosine (None when it can).

    Indexes keep 32-bit floats: larger values overflow, and a zero (or vanishing) vector has no
    direction, so its cosine similarity is undefined.
    """
    stored = array("f", values)
    if not all(math.isfinite(v) for v in stored):
        return "vector values must be finite 32-bit floats (no NaN or Infinity; |value| <= 3.4e38)"
    if not FLOAT32_TINY <= sum(v * v for v in stored) <= FLOAT32_MAX:
        return (
            "the vector's length must be between 1.1e-19 and 1.8e19 (norms are computed in 32-bit "
            "floats; a zero vector has no direction)"
        )
    return None


def vector_lane_can_match(
    scope: SearchScope, query_embedding: Sequence[float], dimensions: int, limit: int
) -> bool:
    """Whether a vector lane can find anything; a query vector of another length is a ValueError."""
    if scope.sees_nothing or limit <= 0:
        return False
    if len(query_embedding) != dimensions:
        raise ValueError(f"query vector has {len(query_embedding)} dimensions, expected {dimensions}")
    return True


def keyword_lane_can_match(scope: SearchScope, query_text: str, languages: Sequence[str], limit: int) -> bool:
    """Whether a keyword lane can find anything (a scope that sees something, words, languages)."""
    return not scope.sees_nothing and limit > 0 and bool(query_text.strip()) and bool(languages)


def validate_dimensions(updates: Sequence[EmbeddingUpdate], dimensions: int) -> None:
    """Raise ValueError when any vector's length differs from `dimensions` or it cannot be stored."""
    if dimensions <= 0:
        raise ValueError(f"dimensions must be positive, got {dimensions}")
    for update in updates:
        if len(update.vector) != dimensions:
            raise ValueError(
                f"chunk {update.chunk_id}: vector has {len(update.vector)} dimensions, expected {dimensions}"
            )
        problem = vector_problem(update.vector)
        if problem:
            raise ValueError(f"chunk {update.chunk_id}: {problem}")
