"""Chunks keep their tsvector and ACL in the row: the keyword lane reads both for every candidate it
scores; and its candidate index keeps no pending list for searches to scan."""

from __future__ import annotations

import importlib
import random

import pytest
from django.db import connection

from knowledge.services.documents import document_upsert
from tests.factories import ConnectorFactory

pytestmark = pytest.mark.django_db
migration = importlib.import_module("knowledge.migrations.0016_chunk_search_vector_inline")
acl_migration = importlib.import_module("knowledge.migrations.0017_chunk_row_layout")


def long_text(seed: int) -> str:
    """About 250 distinct-ish words: content and tsvector together pass the 2 kB TOAST threshold."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return " ".join("".join(rng.choices(letters, k=rng.randint(5, 10))) for _ in range(250))


def out_of_line(document_id: int, column: str = "search_vector") -> list[bool]:
    """Whether each chunk of the document keeps `column` in the TOAST table."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT pg_column_toast_chunk_id({column}) IS NOT NULL FROM knowledge_chunk "
            "WHERE document_id = %s ORDER BY chunk_index",
            [document_id],
        )
        return [row[0] for row in cursor.fetchall()]


def vectors(document_id: int) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT search_vector::text FROM knowledge_chunk WHERE document_id = %s ORDER BY chunk_index",
            [document_id],
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.fixture
def requires_pg17() -> None:
    if connection.pg_version < 170000:  # type: ignore[attr-defined]
        pytest.skip("pg_column_toast_chunk_id needs PostgreSQL 17")


def test_a_long_chunk_keeps_its_tsvector_in_the_row(requires_pg17: None) -> None:
    connector = ConnectorFactory.create()
    doc = document_upsert(connector=connector, external_id="long", content=long_text(1), is_public=True)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_size(content) + pg_column_size(search_vector) > 2032, "
            "pg_column_toast_chunk_id(content) IS NOT NULL FROM knowledge_chunk WHERE document_id = %s",
            [doc.document.pk],
        )
        big, content_out = cursor.fetchone()
    assert big and content_out  # the row had to shed something, and it was the content
    assert out_of_line(doc.document.pk) == [False]


def test_the_migration_brings_out_of_line_vectors_back_unchanged(requires_pg17: None) -> None:
    connector = ConnectorFactory.create()
    doc = document_upsert(connector=connector, external_id="long", content=long_text(2), is_public=True)
    pk = doc.document.pk
    before = vectors(pk)
    with connection.cursor() as cursor:  # what a table created before the migration holds
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(migration.STORAGE.format(storage="EXTERNAL"))
        cursor.execute(migration.REWRITE.format(condition=f"document_id = {pk}"))
        cursor.execute(migration.STORAGE.format(storage="MAIN"))
    assert out_of_line(pk) == [True]
    with connection.schema_editor() as editor:
        migration.rewrite_out_of_line(None, editor)
    assert out_of_line(pk) == [False]
    assert vectors(pk) == before
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'knowledge_chunk'::regclass "
            "AND NOT tgisinternal AND tgenabled = 'D'"
        )
        assert cursor.fetchone()[0] == 0  # the triggers are on again


def test_a_long_chunk_keeps_its_acl_in_the_row(requires_pg17: None) -> None:
    connector = ConnectorFactory.create()
    doc = document_upsert(connector=connector, external_id="long", content=long_text(3), is_public=True)
    assert out_of_line(doc.document.pk, "acl_tokens") == [False]


def test_the_migration_brings_out_of_line_acls_back_unchanged(requires_pg17: None) -> None:
    connector = ConnectorFactory.create()
    doc = document_upsert(connector=connector, external_id="long", content=long_text(4), is_public=True)
    pk = doc.document.pk
    with connection.cursor() as cursor:  # what a table created before the migration holds
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(acl_migration.STORAGE.format(storage="EXTENDED"))
        cursor.execute(acl_migration.REWRITE.format(condition=f"document_id = {pk}"))
        cursor.execute(acl_migration.STORAGE.format(storage="MAIN"))
        cursor.execute("SELECT acl_tokens FROM knowledge_chunk WHERE document_id = %s", [pk])
        before = cursor.fetchall()
    assert out_of_line(pk, "acl_tokens") == [True]
    with connection.schema_editor() as editor:
        acl_migration.rewrite_out_of_line(None, editor)
    assert out_of_line(pk, "acl_tokens") == [False]
    with connection.cursor() as cursor:
        cursor.execute("SELECT acl_tokens FROM knowledge_chunk WHERE document_id = %s", [pk])
        assert cursor.fetchall() == before == [(["public"],)]


def test_the_candidate_index_keeps_no_pending_list() -> None:
    connector = ConnectorFactory.create()
    for i in range(5):
        document_upsert(connector=connector, external_id=f"d{i}", content=long_text(10 + i), is_public=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT gin_clean_pending_list('chunk_tenant_lexemes_gin'::regclass)")
        assert cursor.fetchone()[0] == 0  # nothing was queued for searches to scan
