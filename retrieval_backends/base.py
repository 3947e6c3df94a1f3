"""The retrieval-backend contract: every backend implements it, callers use nothing else."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from retrieval_backends.types import (
    AccessScope,
    ChunkInput,
    DocumentState,
    EmbeddingUpdate,
    LaneHit,
    NeighborAnchor,
    SearchScope,
    StoredChunk,
)


class BackendError(Exception):
    """Base class of backend failures."""


class BackendUnavailable(BackendError):
    """A transient failure (connection refused, node down); the operation may be retried."""


class KnowledgeRetrievalBackend:
    """Stores chunks and their vectors and runs the search lanes.

    Guarantees every implementation gives (the contract suite in tests/contract checks them):

    * Every search method applies the whole scope -- tenant, connectors, ACL tokens (unless
      `bypass_acl`), environment and soft-delete -- *inside* its query, before ranking; never by
      trimming a top-k afterwards. A scope that `sees_nothing` returns no hits.
    * Hits are ordered by descending score; ties keep a stable order (chunk id).
    * Writes are idempotent: repeating one converges on the same state.
    * PostgreSQL stays the source of truth. A backend with `requires_result_verification = True`
      may return stale or foreign ids; callers re-check every hit against PostgreSQL.
    """

    #: True when hits come from an external index and must be re-verified against PostgreSQL.
    requires_result_verification: bool = False
    #: True when the backend keeps its own copy of documents that the sync hooks must update.
    requires_index_sync: bool = False
    #: True when the sync hooks need each document's chunks and vectors, not only its filters.
    mirrors_content: bool = False
    #: True when `vector_search` and `keyword_search` take `text_hits=N`: their first N hits then
    #: carry content, title, URL, page and document external id (read in the lane's own query).
    reads_lane_text: bool = False
    #: Short name used in messages and health reports.
    name: str = "base"

    def __init__(self, **options: Any) -> None:
        self.options = options

    # --- writes -------------------------------------------------------------------------------------
    def insert_chunks(self, chunks: Sequence[ChunkInput]) -> list[StoredChunk]:
        """Store chunks (and their full-text vectors); returns them with ids, in input order.

        :raises BackendUnavailable: on a transient failure.
        """
        raise NotImplementedError("subclasses of KnowledgeRetrievalBackend must provide insert_chunks()")

    def index_embeddings(self, updates: Sequence[EmbeddingUpdate], dimensions: int) -> int:
        """Upsert vectors (one per chunk and model); every vector must have `dimensions` entries.

        Vectors of other dimensions already stored are left untouched. Returns the count written.

        :raises ValueError: when a vector's length differs from `dimensions`.
        """
        raise NotImplementedError("subclasses of KnowledgeRetrievalBackend must provide index_embeddings()")

    def delete_document_chunks(self, document_id: int) -> int:
        """Delete every chunk (and vector) of a document; returns how many chunks went. Idempotent."""
        raise NotImplementedError(
            "subclasses of KnowledgeRetrievalBackend must provide delete_document_chunks()"
        )

    def update_document_filters(self, states: Sequence[DocumentState]) -> int:
        """Write documents' filter state (tenant, connector, environment, deletion, ACL tokens) onto
        their canonical chunks and vectors, in the caller's transaction; returns rows changed.

        This is what search filters on in PostgreSQL and what canonical neighbours use; an external
        index receives the same state later through `sync_document_access`.
        """
        raise NotImplementedError(
            "subclasses of KnowledgeRetrievalBackend must provide update_document_filters()"
        )

    def lock_chunk_writes(self) -> None:
        """Block every chunk write until the caller's transaction ends (a reindex switch)."""
        raise NotImplementedError("subclasses of KnowledgeRetrievalBackend must provide lock_chunk_writes()")

    def get_document_chunks(self, document_id: int) -> list[StoredChunk]:
        """The document's chunks in chunk-index order."""
        raise NotImplementedError(
            "subclasses of KnowledgeRetrievalBackend must provide get_document_chunks()"
        )

    def count_document_chunks(self, document_id: int) -> int:
        """How many chunks the document has."""
        raise NotImplementedError(
            "subclasses of KnowledgeRetrievalBackend must provide count_document_chunks()"
        )

    # --- search lanes -------------------------------------------------------------------------------
    def vector_search(
        self,
        scope: SearchScope,
        query_embedding: Sequence[float],
        dimensions: int,
        limit: int,
        *,
        model: str | None = None,
    ) -> list[LaneHit]:
        """Nearest chunks by cosine similarity among vectors of exactly `dimensions` (and `model`).

        Score is the cosine similarity. Vectors of other dimensions are never returned.
        """
        raise NotImplementedError("subclasses of KnowledgeRetrievalBackend must provide vector_search()")

    def keyword_search(
        self, scope: SearchScope, query_text: str, languages: Sequence[str], limit: int
    ) -> list[LaneHit]:
        """Full-text ranked chunks; the query is parsed with each language's configuration.

        Any query term may match (OR semantics); score grows with term rarity and frequency.
        """
        raise NotImplementedError("subclasses of KnowledgeRetrievalBackend must provide keyword_search()")

    # --- context ------------------------------------------------------------------------------------
    def find_neighbors(
        self, access_scope: AccessScope, anchors: Iterable[NeighborAnchor], radius: int
    ) -> list[LaneHit]:
        """Chunks within `radius` of each anchor in the same document (anchors excluded).

        Walking away from an anchor stops at the first missing or inaccessible chunk; never crosses
        documents. Score is 0.0.
        """
        raise NotImplementedError("subclasses of KnowledgeRetrievalBackend must provide find_neighbors()")

    # --- vectors ------------------------------------------------------------------------------------
    def chunks_missing_embedding(self, model: str, after_id: int, limit: int) -> list[tuple[int, str]]:
        """(chunk id, text) of up to `limit` chunks after `after_id` with no vector of `model`, by id."""
        raise NotImplementedError(
            "subclasses of KnowledgeRetrievalBackend must provide chunks_missing_embedding()"
        )

    def count_chunks_missing_embedding(self, model: str) -> int:
        """How many chunks have no vector of `model` (a reindex may switch when this is 0)."""
        raise NotImplementedError(
            "subclasses of KnowledgeRetrievalBackend must provide count_chunks_missing_embedding()"
        )

    def prune_embeddings(self, keep_models: Sequence[str]) -> int:
        """Delete every vector of models not in `keep_models`; returns how many went."""
        raise NotImplementedError("subclasses of KnowledgeRetrievalBackend must provide prune_embeddings()")

    def get_chunk_vectors(
        self, chunk_ids: Sequence[int], dimensions: int, model: str | None
    ) -> dict[int, tuple[float, ...]]:
        """Stored vectors of these chunks with this dimension (and model); chunks without one are absent."""
        raise NotImplementedError("subclasses of KnowledgeRetrievalBackend must provide get_chunk_vectors()")

    def embedding_inventory(
        self, model: str, dimensions: int, ignored: Sequence[str]
    ) -> list[tuple[Any, ...]]:
        """Per tenant: (slug, chunks with any vector, chunks with `model`'s, the other models stored)."""
        raise NotImplementedError(
            "subclasses of KnowledgeRetrievalBackend must provide embedding_inventory()"
        )

    # --- diagnostics --------------------------------------------------------------------------------
    def get_text_search_languages(self, tenant_id: int, connector_ids: Sequence[int] | None) -> list[str]:
        """Text-search configurations used by the chunks of these connectors (all when None)."""
        raise NotImplementedError(
            "subclasses of KnowledgeRetrievalBackend must provide get_text_search_languages()"
        )

    def get_populated_embedding_dimensions(
        self, tenant_id: int, connector_ids: Sequence[int] | None
    ) -> list[int]:
        """Dimensions for which at least one vector is stored, ascending."""
        raise NotImplementedError(
            "subclasses of KnowledgeRetrievalBackend must provide get_populated_embedding_dimensions()"
        )

    def get_embedding_models(self, tenant_id: int) -> list[tuple[int, str]]:
        """(dimensions, model) pairs of the tenant's stored vectors, ascending."""
        raise NotImplementedError(
            "subclasses of KnowledgeRetrievalBackend must provide get_embedding_models()"
        )

    def has_embedding_model(self, tenant_id: int, model: str) -> bool:
        """Whether the tenant has at least one vector written by this embedding model."""
        raise NotImplementedError(
            "subclasses of KnowledgeRetrievalBackend must provide has_embedding_model()"
        )

    def has_keyword_statistics(
        self, tenant_id: int, languages: Sequence[str], connector_ids: Sequence[int] | None
    ) -> bool:
        """Whether corpus statistics for true BM25 exist for these languages."""
        raise NotImplementedError(
            "subclasses of KnowledgeRetrievalBackend must provide has_keyword_statistics()"
        )

    def is_search_timeout(self, error: BaseException) -> bool:
        """Whether `error` is this backend's search-timeout error (the lane is then dropped)."""
        raise NotImplementedError("subclasses of KnowledgeRetrievalBackend must provide is_search_timeout()")

    def health(self) -> None:
        """Return quietly when the backend answers; raise BackendUnavailable otherwise."""
        raise NotImplementedError("subclasses of KnowledgeRetrievalBackend must provide health()")

    # --- sync hooks (no-ops where PostgreSQL is the index) -------------------------------------------
    def sync_document_access(
        self, states: Sequence[DocumentState], generation: int | None = None
    ) -> dict[int, str]:
        """Make the index hold exactly these documents' states (absolute, never deltas). Idempotent:
        pushing the same state twice changes nothing, and a push never blanks a field. `generation`
        names a rebuild's new index instead of the serving one.

        :returns: document id -> error for documents that could not be written (the rest were).
        :raises BackendUnavailable: when the index cannot be reached at all (retry later).
        """
        return {}

    def sync_document_deletions(self, deletions: Mapping[int, int]) -> dict[int, str]:
        """Remove these documents (all their chunks) from the index: document id -> the deletion's
        version, higher than any version of the document, so a push of an older state that lands
        after it never brings the document back. Idempotent; missing ones are fine.

        :returns: document id -> error for deletions that failed.
        :raises BackendUnavailable: when the index cannot be reached at all.
        """
        return {}

    def delete_documents_chunks(self, document_ids: Sequence[int]) -> int:
        """Delete every chunk (and vector) of these documents; returns how many chunks went."""
        return sum(self.delete_document_chunks(document_id) for document_id in document_ids)

    def start_index_generation(self, dimensions: Sequence[int]) -> int | None:
        """Create an empty new index generation to rebuild into; None when there is no index."""
        return None

    def activate_index_generation(self, generation: int) -> None:
        """Serve searches from this generation (atomically) and drop the older ones."""

    def abandon_index_generation(self, generation: int) -> None:
        """Drop a generation that was never activated."""

    def supported_languages(self) -> set[str]:
        """Language names documents may use (text-search configurations of the canonical store)."""
        raise NotImplementedError(
            "subclasses of KnowledgeRetrievalBackend must provide supported_languages()"
        )

    def keyword_warnings(
        self, tenant_id: int, languages: Sequence[str], connector_ids: Sequence[int] | None
    ) -> list[str]:
        """Warnings for a keyword search in these languages (missing statistics, an analyzer fallback)."""
        return []

    def rebuild_keyword_statistics(self, tenant_id: int | None) -> str:
        """Recompute keyword statistics where the backend keeps its own; returns what was done."""
        return f"the {self.name} backend keeps no statistics of its own"

    def doctor_checks(self) -> list[tuple[str, str, str, str]]:
        """(OK/WARN/FAIL, subject, message, fix) findings about the backend for `manage.py doctor`."""
        return []


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
