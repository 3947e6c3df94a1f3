"""Bulk ingestion and the ingest command: files, BEIR corpora, idempotency, chunk replacement."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from knowledge.connectors.files import html_to_text
from knowledge.models import Chunk, ChunkEmbedding, Connector, Document, KeywordStatistics
from knowledge.pipeline.active import active_embedder
from knowledge.services.ingestion import SourceAcl, SourceDocument, documents_ingest
from tests.factories import ConnectorFactory, PrincipalFactory

pytestmark = pytest.mark.django_db


PUBLIC = SourceAcl(public=True)


def docs(n: int, text: str = "alpha beta gamma {i}") -> list[SourceDocument]:
    return [SourceDocument(external_id=f"d{i}", content=text.format(i=i), acl=PUBLIC) for i in range(n)]


def test_batches_write_documents_chunks_vectors_and_statistics() -> None:
    connector = ConnectorFactory.create()
    progress: list[tuple[int, int]] = []
    stats = documents_ingest(
        connector=connector,
        documents=docs(10),
        batch_size=3,
        on_progress=lambda d, c: progress.append((d, c)),
    )
    assert (stats.documents, stats.written, stats.unchanged, stats.chunks) == (10, 10, 0, 10)
    assert sum(d for d, _ in progress) == 10 and sum(c for _, c in progress) == 10
    assert Document.objects.filter(connector=connector).count() == 10
    embeddings = ChunkEmbedding.objects.filter(chunk__document__connector=connector)
    assert embeddings.count() == 10 and {e.model for e in embeddings} == {active_embedder().name}
    assert KeywordStatistics.objects.get(tenant=connector.tenant, language="english").chunk_count == 10
    assert all(
        t == ["public"]
        for t in Chunk.objects.filter(connector=connector).values_list("acl_tokens", flat=True)
    )


def test_reingest_skips_unchanged_and_replaces_changed_content() -> None:
    connector = ConnectorFactory.create()
    documents_ingest(connector=connector, documents=docs(5))
    first_ids = set(Chunk.objects.filter(connector=connector).values_list("id", flat=True))
    changed = docs(5)
    changed[2] = SourceDocument(external_id="d2", content="entirely new words here", acl=PUBLIC)
    stats = documents_ingest(connector=connector, documents=changed)
    assert (stats.written, stats.unchanged) == (1, 4)
    after = set(Chunk.objects.filter(connector=connector).values_list("id", flat=True))
    assert len(first_ids - after) == 1 and len(after) == 5
    assert Chunk.objects.get(document__external_id="d2", connector=connector).content.endswith(
        "entirely new words here"
    )


def test_unchanged_content_with_new_acl_updates_tokens_without_reembedding() -> None:
    connector = ConnectorFactory.create()
    documents_ingest(connector=connector, documents=docs(2))
    vectors_before = set(
        ChunkEmbedding.objects.filter(chunk__connector=connector).values_list("id", flat=True)
    )
    user = PrincipalFactory.create(tenant=connector.tenant)
    acl = SourceAcl(users=(user.external_id,))
    private = [SourceDocument(external_id="d0", content="alpha beta gamma 0", acl=acl), docs(2)[1]]
    stats = documents_ingest(connector=connector, documents=private)
    assert (stats.updated, stats.unchanged, stats.rechunked) == (1, 1, set())
    assert Chunk.objects.get(document__external_id="d0", connector=connector).acl_tokens == [user.acl_token]
    assert (
        set(ChunkEmbedding.objects.filter(chunk__connector=connector).values_list("id", flat=True))
        == vectors_before
    )


def test_duplicate_ids_in_one_batch_keep_the_last() -> None:
    connector = ConnectorFactory.create()
    batch = [
        SourceDocument(external_id="x", content="first"),
        SourceDocument(external_id="x", content="second"),
    ]
    documents_ingest(connector=connector, documents=batch)
    assert Document.objects.get(connector=connector, external_id="x").content == "second"


def test_ingest_command_loads_markdown_text_and_html(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text("# Guide\nInstall the widget.\n## Usage\nTurn it on.")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "notes.txt").write_text("plain notes")
    (tmp_path / "page.html").write_text(
        "<html><title>Page</title><script>x()</script><h1>Head</h1><p>Body text</p></html>"
    )
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    out = io.StringIO()
    call_command("ingest", str(tmp_path), "--tenant", "files-test", stdout=out, stderr=io.StringIO())
    assert "3 documents (3 written, 0 unchanged)" in out.getvalue() and "docs/s" in out.getvalue()
    documents = {d.external_id: d for d in Document.objects.filter(tenant__slug="files-test")}
    assert set(documents) == {"guide.md", "sub/notes.txt", "page.html"}
    assert documents["page.html"].title == "Page" and "x()" not in documents["page.html"].content
    assert Connector.objects.get(tenant__slug="files-test", name="files").kind == "filesystem"
    out = io.StringIO()
    call_command("ingest", str(tmp_path), "--tenant", "files-test", stdout=out, stderr=io.StringIO())
    assert "(0 written, 3 unchanged)" in out.getvalue()


def test_ingest_command_loads_a_beir_corpus(tmp_path: Path) -> None:
    rows = [{"_id": f"c{i}", "title": f"T{i}", "text": f"text number {i}"} for i in range(4)]
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    out = io.StringIO()
    call_command("ingest", "--beir", str(tmp_path), "--tenant", "beir-test", stdout=out, stderr=io.StringIO())
    assert "4 documents" in out.getvalue()
    assert Document.objects.filter(tenant__slug="beir-test", connector__name="beir").count() == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "either PATH"),
        (["/no/such/dir"], "no such file"),
        (["--beir", "/tmp"], "not a BEIR dataset"),
    ],
)
def test_ingest_command_errors(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("ingest", *args, stdout=io.StringIO(), stderr=io.StringIO())


def test_html_to_text_keeps_headings() -> None:
    title, text = html_to_text("<title>T</title><h2>Sub</h2><p>One <b>two</b></p><style>p{}</style>")
    assert title == "T" and text == "## Sub\nOne two"


def column_statistics() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stats WHERE tablename = 'knowledge_chunk'")
        return int(cursor.fetchone()[0])


def test_a_bulk_ingest_analyzes_the_search_tables(db, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from django.db import connection

    from knowledge.store import statistics as table_statistics

    with connection.cursor() as cursor:  # pg_statistic is transactional: the test sees its own ANALYZE
        cursor.execute("DELETE FROM pg_statistic WHERE starelid = 'knowledge_chunk'::regclass")
    monkeypatch.setattr(table_statistics, "BULK_CHUNKS", 3)
    connector = ConnectorFactory.create()
    documents_ingest(connector=connector, documents=[SourceDocument(external_id="a", content="one")])
    assert column_statistics() == 0  # one chunk is no bulk load
    docs = [SourceDocument(external_id=f"d{i}", content=f"text number {i}") for i in range(4)]
    documents_ingest(connector=connector, documents=docs)
    assert column_statistics() > 0
