"""The search-index contract: what every retrieval backend implements, and callers use nothing else.

A retrieval backend is the narrow, pluggable part of the service: its lanes, and, for an index
outside PostgreSQL, the writes that mirror the canonical store into it and its generations. The
canonical store itself (documents, chunks, vectors, grants: `knowledge.store`) is PostgreSQL's and is
not pluggable; a backend never reads or writes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from retrieval_backends.types import DocumentState, LaneHit, SearchScope


class BackendError(Exception):
    """Base class of backend failures."""


class BackendUnavailable(BackendError):
    """A transient failure (connection refused, node down); the operation may be retried."""


class LaneTimedOut(BackendError):
    """A lane ran out of its time budget: the search leaves it out with a warning (never a partial
    answer passed off as whole)."""


class KnowledgeRetrievalBackend:
    """A search index: a vector lane and a keyword lane over the chunks of the canonical store.

    Guarantees every implementation gives (`retrieval_backends.testing` checks them):

    * Every lane applies the whole scope -- tenant, connectors, ACL tokens (unless `bypass_acl`),
      environment and soft-delete -- *inside* its query, before ranking; never by trimming a top-k
      afterwards. A scope that `sees_nothing` returns no hits.
    * Hits are ordered by descending score; ties keep a stable order (chunk id).
    * A lane that runs out of time raises `LaneTimedOut`; one that cannot reach its index raises
      `BackendUnavailable`.
    * `text_hits=N` asks a lane for the text and citation fields of its first N hits, read with them
      (a lane may give fewer, or none: hits without text have `content` None and are read by the
      caller).
    """

    #: Short name used in messages and health reports.
    name: str = "base"

    def __init__(self, **options: Any) -> None:
        self.options = options

    def vector_search(
        self,
        scope: SearchScope,
        query_embedding: Sequence[float],
        dimensions: int,
        limit: int,
        *,
        model: str | None = None,
        text_hits: int = 0,
    ) -> list[LaneHit]:
        """Nearest chunks by cosine similarity among vectors of exactly `dimensions` (and `model`).

        Score is the cosine similarity. Vectors of other dimensions are never returned.

        :raises ValueError: when the query vector's length is not `dimensions`.
        """
        raise NotImplementedError("subclasses of KnowledgeRetrievalBackend must provide vector_search()")

    def keyword_search(
        self, scope: SearchScope, query_text: str, languages: Sequence[str], limit: int, *, text_hits: int = 0
    ) -> list[LaneHit]:
        """Full-text ranked chunks; the query is parsed with each language's configuration.

        Any query term may match (OR semantics); score grows with term rarity and frequency.
        """
        raise NotImplementedError("subclasses of KnowledgeRetrievalBackend must provide keyword_search()")

    def keyword_warnings(self, tenant_id: int, languages: Sequence[str]) -> list[str]:
        """Warnings for a keyword search in these languages (missing statistics, an analyzer fallback)."""
        return []

    def health(self) -> None:
        """Return quietly when the index answers; raise BackendUnavailable otherwise."""
        raise NotImplementedError("subclasses of KnowledgeRetrievalBackend must provide health()")

    def doctor_checks(self) -> list[tuple[str, str, str, str]]:
        """(OK/WARN/FAIL, subject, message, fix) findings about the index for `manage.py doctor`."""
        return []


class ExternalIndex(KnowledgeRetrievalBackend):
    """An index outside PostgreSQL. It holds a mirror of the canonical store that the index-sync
    service pushes to it (absolute document states, never deltas), so its hits may be stale: every
    hit is verified against PostgreSQL before anyone sees it, and an index contributes only chunk ids
    and scores. It is rebuilt blue/green through generations.
    """

    def sync_document_access(
        self, states: Sequence[DocumentState], generation: int | None = None
    ) -> dict[int, str]:
        """Make the index hold exactly these documents' states, chunks and vectors included. Writes of
        a lower `DocumentState.version` never overwrite or delete what a higher one wrote, whatever
        order pushes finish in. Idempotent: the same state twice changes nothing; a push never
        blanks a field. `generation` names a rebuild's new index instead of the serving one.

        :returns: document id -> error for documents that could not be written (the rest were).
        :raises BackendUnavailable: when the index cannot be reached at all (retry later).
        """
        raise NotImplementedError("subclasses of ExternalIndex must provide sync_document_access()")

    def sync_document_deletions(self, deletions: Mapping[int, int]) -> dict[int, str]:
        """Remove these documents (all their chunks) from the index: document id -> the deletion's
        version, higher than any version of the document, so a push of an older state that lands
        after it never brings the document back. Idempotent; missing ones are fine.

        :returns: document id -> error for deletions that failed.
        :raises BackendUnavailable: when the index cannot be reached at all.
        """
        raise NotImplementedError("subclasses of ExternalIndex must provide sync_document_deletions()")

    def start_index_generation(
        self, dimensions: Sequence[int], *, storages: Sequence[str] = ("vector",)
    ) -> int:
        """Create an empty new generation (for these vector dimensions, in these storages: `vector`,
        `halfvec`) to rebuild into."""
        raise NotImplementedError("subclasses of ExternalIndex must provide start_index_generation()")

    def activate_index_generation(self, generation: int) -> None:
        """Serve searches from this generation (atomically) and drop the older ones."""
        raise NotImplementedError("subclasses of ExternalIndex must provide activate_index_generation()")

    def abandon_index_generation(self, generation: int) -> None:
        """Drop a generation that was never activated."""
        raise NotImplementedError("subclasses of ExternalIndex must provide abandon_index_generation()")

    def indexed_chunks_per_tenant(self) -> dict[int, int]:
        """tenant id -> live chunks the serving index holds (the doctor compares it with PostgreSQL)."""
        raise NotImplementedError("subclasses of ExternalIndex must provide indexed_chunks_per_tenant()")

    def refresh(self) -> None:
        """Make every write searchable now (tests and tools; serving relies on the index's own pace)."""


def is_external(backend: KnowledgeRetrievalBackend) -> bool:
    """Whether the backend is an index outside PostgreSQL (synced, verified, rebuilt by generations)."""
    return isinstance(backend, ExternalIndex)
