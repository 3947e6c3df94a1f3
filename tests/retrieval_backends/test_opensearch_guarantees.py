"""OpenSearch-specific guarantees on the real node: forged records, timeouts, deletions, rebuilds."""

from __future__ import annotations

from pathlib import Path

import pytest
from opensearchpy import OpenSearch

from knowledge.models import Chunk, Document
from knowledge.search import search_chunks
from knowledge.services.connector_sync import connector_sync
from knowledge.services.deletion import connector_purge
from knowledge.services.documents import document_hard_delete, document_set_acl, document_upsert
from knowledge.services.index_sync import index_status
from knowledge.services.index_sync.rebuild import index_rebuild
from retrieval_backends.base import LaneTimedOut
from retrieval_backends.opensearch import OpenSearchRetrievalBackend
from retrieval_backends.types import SearchScope
from tests.factories import ConnectorFactory, PrincipalFactory
from tests.opensearch import URL, indexed_documents, opensearch_backend, settle

__all__ = ["opensearch_backend"]
pytestmark = [pytest.mark.django_db, pytest.mark.opensearch]
QUERY = "harbour ferry timetable"


def public(tenant_id: int) -> SearchScope:
    return SearchScope(tenant_id=tenant_id, principal_tokens=frozenset({"public"}))


def texts(
    scope: SearchScope, query: str = QUERY, limit: int = 10, lanes: tuple[str, ...] = ("vector", "keyword")
):  # type: ignore[no-untyped-def]
    return [
        (h.document_id, h.content)
        for h in search_chunks(scope=scope, query_text=query, limit=limit, lanes=lanes).hits
    ]


def test_forged_and_stale_records_are_never_served(opensearch_backend: OpenSearchRetrievalBackend) -> None:
    backend = opensearch_backend
    mine, theirs = ConnectorFactory.create(), ConnectorFactory.create()
    user = PrincipalFactory.create(tenant=mine.tenant)
    visible = document_upsert(
        connector=mine, external_id="v", content=f"{QUERY} visible", is_public=True
    ).document
    private = document_upsert(
        connector=mine, external_id="p", content=f"{QUERY} private", principals=[user]
    ).document
    foreign = document_upsert(
        connector=theirs, external_id="f", content=f"{QUERY} foreign", is_public=True
    ).document
    gone = document_upsert(connector=mine, external_id="g", content=f"{QUERY} gone", is_public=True).document
    settle(backend)
    gone_chunk = Chunk.objects.get(document=gone).pk
    document_hard_delete(document_id=gone.pk)  # the index is not told: a stale record remains
    forged = {
        str(Chunk.objects.get(document=foreign).pk): (foreign, "another tenant's chunk, forged into ours"),
        str(gone_chunk): (gone, "a deleted chunk"),
        str(Chunk.objects.get(document=visible).pk): (visible, "ALTERED TEXT " + QUERY),
        str(Chunk.objects.get(document=private).pk): (private, "a widened ACL"),
    }
    for doc_id, (document, text) in forged.items():
        source = {
            "chunk_id": int(doc_id), "document_id": document.pk, "chunk_index": 0,
            "tenant_id": mine.tenant_id, "connector_id": mine.pk, "acl_tokens": ["public"],
            "is_deleted": False, "language": "english", "title_english": "", "text_english": text,
        }  # fmt: skip
        backend.client.index(index=backend.names.chunks, id=doc_id, body=source, refresh=True)
    found = texts(public(mine.tenant_id), lanes=("keyword",), limit=20)
    assert [doc for doc, _ in found] == [visible.pk]
    assert found[0][1] == f"{QUERY} visible"  # rehydrated from PostgreSQL, never the index's text


def test_a_timed_out_response_is_never_used_silently(opensearch_backend: OpenSearchRetrievalBackend) -> None:
    backend = opensearch_backend
    client = OpenSearch([URL])
    heavy = "double s = 0; for (int i = 0; i < 50000; i++) { s += Math.sqrt(i); } return s;"
    index = f"{backend.names.prefix}-slow"
    client.indices.create(index=index, body={"settings": {"number_of_shards": 1}})
    client.bulk(
        body="".join(f'{{"index":{{"_index":"{index}"}}}}\n{{"n":{i}}}\n' for i in range(2000)), refresh=True
    )
    body = {
        "timeout": "1ms",
        "query": {
            "function_score": {"query": {"match_all": {}}, "script_score": {"script": {"source": heavy}}}
        },
    }
    with pytest.raises(LaneTimedOut, match="timed out"):
        backend._search(index, body)


def test_every_deletion_path_reaches_the_index(
    opensearch_backend: OpenSearchRetrievalBackend, tmp_path: Path
) -> None:
    backend = opensearch_backend
    api = ConnectorFactory.create()
    one = document_upsert(connector=api, external_id="one", content=f"{QUERY} one", is_public=True).document
    two = document_upsert(connector=api, external_id="two", content=f"{QUERY} two", is_public=True).document
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.md").write_text(f"{QUERY} file {name}")
    folder = ConnectorFactory.create(tenant=api.tenant, kind="filesystem", config={"path": str(tmp_path)})
    connector_sync(connector=folder)
    settle(backend)
    files = {d.external_id: d.pk for d in Document.objects.filter(connector=folder)}
    assert set(indexed_documents(backend)) == {one.pk, two.pk, *files.values()}

    document_hard_delete(document_id=one.pk)  # 1. one document
    (tmp_path / "a.md").unlink()
    connector_sync(connector=folder)  # 2. removed from the source during a sync
    (tmp_path / "b.md").unlink()
    connector_sync(connector=folder, full=True)  # 4. a forced full resync
    settle(backend)
    assert set(indexed_documents(backend)) == {two.pk, files["c.md"]}
    connector_purge(connector=api)  # 3. every document of a connector
    settle(backend)
    assert set(indexed_documents(backend)) == {files["c.md"]}
    assert not index_status().pending


def test_a_revoked_acl_is_hidden_before_and_after_the_push_and_top_k_stays_full(
    opensearch_backend: OpenSearchRetrievalBackend,
) -> None:
    backend = opensearch_backend
    connector = ConnectorFactory.create()
    user = PrincipalFactory.create(tenant=connector.tenant)
    docs = [
        document_upsert(
            connector=connector, external_id=f"d{i}", content=f"{QUERY} {'extra ' * i}", is_public=True
        ).document
        for i in range(12)
    ]
    settle(backend)
    revoked = docs[:6]  # the best-ranked ones
    for document in revoked:
        document_set_acl(document=document, is_public=False, principals=[user])
    before = search_chunks(
        scope=public(connector.tenant_id), query_text=QUERY, limit=6, lanes=("keyword",), candidates=6
    )
    assert {h.document_id for h in before.hits}.isdisjoint({d.pk for d in revoked})  # verification hides them
    assert len(before.hits) == 6  # and the lane was asked for more, so the page is still full
    settle(backend)
    raw = backend.keyword_search(public(connector.tenant_id), QUERY, ["english"], 20)
    assert {h.document_id for h in raw}.isdisjoint({d.pk for d in revoked})  # the index's own lane agrees


def test_a_rebuild_swaps_in_a_new_generation_while_searches_keep_working(
    opensearch_backend: OpenSearchRetrievalBackend,
) -> None:
    backend = opensearch_backend
    connector = ConnectorFactory.create()
    for i in range(5):
        document_upsert(connector=connector, external_id=f"d{i}", content=f"{QUERY} {i}", is_public=True)
    settle(backend)
    expected = sorted(texts(public(connector.tenant_id)))
    seen: list[list[tuple[int, str]]] = []

    def meanwhile(_: int) -> None:
        seen.append(sorted(texts(public(connector.tenant_id))))
        document_upsert(connector=connector, external_id="late", content=f"{QUERY} late", is_public=True)

    stats = index_rebuild(batch_size=2, on_progress=meanwhile)
    assert stats.generation == 2 and all(found == expected for found in seen)
    settle(backend)
    aliases = {row["alias"]: row["index"] for row in backend.client.cat.aliases(format="json")}
    assert aliases[backend.names.chunks].endswith("-g2")
    assert len(texts(public(connector.tenant_id))) == 6  # the document written during the rebuild is there


@pytest.mark.django_db(transaction=True)  # the searching threads have connections of their own
def test_concurrent_searches_share_pooled_connections(
    opensearch_backend: OpenSearchRetrievalBackend, caplog: pytest.LogCaptureFixture
) -> None:
    """Hybrid lanes and server threads search at once: none of them may throw its connection away."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    connector = ConnectorFactory.create()
    for n in range(5):
        document_upsert(connector=connector, external_id=f"d{n}", content=f"{QUERY} {n}", is_public=True)
    settle(opensearch_backend)
    scope = public(connector.tenant_id)
    with caplog.at_level("WARNING", logger="urllib3.connectionpool"), ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: searched_then_closed(scope, connection), range(40)))
    assert all(len(found) == 5 for found in results)
    assert not [r for r in caplog.records if "pool is full" in r.getMessage()]


def searched_then_closed(scope: SearchScope, connection) -> list[tuple[int, str]]:  # type: ignore[no-untyped-def]
    try:
        return texts(scope)
    finally:
        connection.close()  # the thread's own connection (`connection` is thread-local)


def test_a_push_of_many_documents_at_once_replaces_their_old_chunks(
    opensearch_backend: OpenSearchRetrievalBackend,
) -> None:
    """One reconciler batch far above a delete-by-query's clause limit (1,024 nested clauses)."""
    from knowledge.services.index_sync import index_reconcile
    from knowledge.services.ingestion import SourceAcl, SourceDocument, documents_ingest

    connector = ConnectorFactory.create()

    def load(word: str) -> None:
        documents_ingest(
            connector=connector,
            documents=[
                SourceDocument(external_id=f"d{i}", content=f"{word} {QUERY} {i}", acl=SourceAcl(public=True))
                for i in range(600)
            ],
        )
        stats = index_reconcile(batch_size=600, time_budget=None)
        assert stats.pushed == 600 and not index_status().pending

    load("first")
    load("second")  # every document re-chunked: the first push's chunks must all go
    indexed = indexed_documents(opensearch_backend)
    assert len(indexed) == 600 and set(indexed.values()) == {1}
    first = opensearch_backend.client.count(
        index=opensearch_backend.names.chunks, body={"query": {"match": {"content": "first"}}}
    )
    assert first["count"] == 0
