"""The OpenSearch retrieval backend: lanes on an OpenSearch mirror of the canonical store.

The index-sync service pushes documents' absolute states to it (`sync_document_access`); it never
reads PostgreSQL. Hits are ids and scores only; callers verify and rehydrate them from PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import NotFoundError, TransportError

from retrieval_backends.base import BackendUnavailable, ExternalIndex, LaneTimedOut
from retrieval_backends.opensearch import generations, writes
from retrieval_backends.opensearch.client import ClientOptions, build_client, call, is_timeout
from retrieval_backends.opensearch.mappings import ANALYZERS, FALLBACK_ANALYZER, Names
from retrieval_backends.opensearch.queries import keyword_body, to_hits, vector_body
from retrieval_backends.types import (
    DocumentState,
    LaneHit,
    SearchScope,
    keyword_lane_can_match,
    vector_lane_can_match,
    vector_storage,
)


class OpenSearchRetrievalBackend(ExternalIndex):
    name = "opensearch"

    def __init__(
        self,
        *,
        url: str = "http://127.0.0.1:9200",
        username: str = "",
        password: str = "",
        ca_certs: str | None = None,
        verify_certs: bool = True,
        index_prefix: str = "knowledge",
        timeout_ms: int = 10000,
        lane_timeout_ms: int = 2000,
        http_compress: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.names = Names(index_prefix)
        self.client_options = ClientOptions(
            url, username, password, ca_certs, verify_certs, timeout_ms, http_compress=http_compress
        )
        self.lane_timeout_ms = lane_timeout_ms

    @cached_property
    def client(self) -> OpenSearch:
        # Built on first use, so a forked worker never shares its parent's sockets.
        return build_client(self.client_options)

    # --- lanes --------------------------------------------------------------------------------------
    def _search(self, index: str, body: dict[str, Any]) -> dict[str, Any]:
        timeout = self.lane_timeout_ms / 1000 + 0.5  # the server-side timeout answers first
        try:
            response: dict[str, Any] = self.client.search(index=index, body=body, request_timeout=timeout)
        except NotFoundError:
            return {"hits": {"hits": []}, "timed_out": False}  # nothing indexed there yet
        except (OSConnectionError, TransportError) as exc:
            if is_timeout(exc):  # the lane is left out with a warning, like a PostgreSQL statement timeout
                raise LaneTimedOut(f"OpenSearch search of {index} timed out: {exc}") from exc
            # Node down, refused, or an error answer (4xx/5xx): the search is unavailable, a 503.
            raise BackendUnavailable(f"OpenSearch search of {index} failed: {exc}") from exc
        if response.get("timed_out"):
            raise LaneTimedOut(f"OpenSearch search of {index} timed out after {self.lane_timeout_ms} ms")
        return response

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
        if not vector_lane_can_match(scope, query_embedding, dimensions, limit):
            return []
        body = vector_body(scope, query_embedding, limit, model, self.lane_timeout_ms)
        index = self.names.vectors(dimensions, vector_storage(model))
        return to_hits(self._search(index, body), cosine_from_lucene=True)

    def keyword_search(
        self, scope: SearchScope, query_text: str, languages: Sequence[str], limit: int, *, text_hits: int = 0
    ) -> list[LaneHit]:
        if not keyword_lane_can_match(scope, query_text, languages, limit):
            return []
        body = keyword_body(scope, query_text, languages, limit, self.lane_timeout_ms)
        return to_hits(self._search(self.names.chunks, body))

    def keyword_warnings(self, tenant_id: int, languages: Sequence[str]) -> list[str]:
        unmapped = sorted(set(languages) - set(ANALYZERS))
        if not unmapped:
            return []
        return [
            f"no OpenSearch analyzer for {', '.join(unmapped)}: its chunks are analysed with "
            f"'{FALLBACK_ANALYZER}' (no stemming or stop words)"
        ]

    # --- health -------------------------------------------------------------------------------------
    def health(self) -> None:
        try:
            status = call(lambda: self.client.cluster.health(request_timeout=5), "cluster health")["status"]
        except Exception as exc:
            raise BackendUnavailable(f"OpenSearch is unreachable: {exc}") from exc
        if status == "red":
            raise BackendUnavailable("the OpenSearch cluster is red (a primary shard is unassigned)")

    def doctor_checks(self) -> list[tuple[str, str, str, str]]:
        return generations.doctor_checks(self.client, self.names)

    def indexed_chunks_per_tenant(self) -> dict[int, int]:
        return generations.tenant_counts(self.client, self.names)

    def refresh(self) -> None:
        """Make every write searchable now (tests; production relies on the refresh interval)."""
        call(lambda: self.client.indices.refresh(index=f"{self.names.prefix}-*"), "refresh")

    # --- sync hooks ---------------------------------------------------------------------------------
    def sync_document_access(
        self, states: Sequence[DocumentState], generation: int | None = None
    ) -> dict[int, str]:
        targets = writes.IndexTargets(self.names, generation)
        return writes.push_states(self.client, self.names, states, targets)

    def sync_document_deletions(self, deletions: Mapping[int, int]) -> dict[int, str]:
        return writes.delete_documents(self.client, self.names, deletions)

    def start_index_generation(
        self, dimensions: Sequence[int], *, storages: Sequence[str] = ("vector",)
    ) -> int:
        return generations.start(self.client, self.names, dimensions, storages)

    def activate_index_generation(self, generation: int) -> None:
        generations.activate(self.client, self.names, generation)

    def abandon_index_generation(self, generation: int) -> None:
        generations.abandon(self.client, self.names, generation)
