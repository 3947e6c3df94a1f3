"""Record in PostgreSQL, in the changing transaction, what an external index has to mirror.

* A document row change that an index mirrors (ACL publicity, environment, deletion state, text,
  title, language, connector) bumps its `index_version`.
* Adding or removing an ACL grant, any chunk insert or delete (re-chunking), and any vector written,
  replaced or pruned (a re-embedding), bump it too.
* One bump per transaction is enough (a push reads committed state, all of a transaction or none), so
  a write that touches the row, its grants, chunks and vectors leaves one new row version, not six.
* Deleting a document row, by any path (a service, an ORM cascade, raw SQL), leaves a tombstone.
"""

from django.db import migrations

from knowledge.sql import sql

# Statement-level triggers (transition tables) bump once per statement, however many rows it touched;
# vectors belong to chunks, so a new, replaced or pruned vector bumps its chunk's document.
# The tombstone's trigger has a file of its own: migration 0021 replaces the function alone.
FORWARD = [
    sql("document_bump", 1),
    sql("document_tombstone", 1) + sql("document_tombstone_trigger", 1),
    sql("bump_vectors", 1),
    sql("bump_grants", 1),
    sql("bump_chunks", 1),
]
SOURCES = {"grants": "knowledge_document_allowed_principals", "chunks": "knowledge_chunk"}
BACKWARD = [
    "DROP TRIGGER IF EXISTS knowledge_bump_vectors_ins ON knowledge_chunkembedding;",
    "DROP TRIGGER IF EXISTS knowledge_bump_vectors_upd ON knowledge_chunkembedding;",
    "DROP TRIGGER IF EXISTS knowledge_bump_vectors_del ON knowledge_chunkembedding;",
    "DROP FUNCTION IF EXISTS knowledge_bump_vectors();",
    "DROP TRIGGER IF EXISTS knowledge_document_bump ON knowledge_document;",
    "DROP FUNCTION IF EXISTS knowledge_document_bump();",
    "DROP TRIGGER IF EXISTS knowledge_document_tombstone ON knowledge_document;",
    "DROP FUNCTION IF EXISTS knowledge_document_tombstone();",
] + [
    f"DROP TRIGGER IF EXISTS knowledge_bump_{n}_ins ON {t}; DROP TRIGGER IF EXISTS knowledge_bump_{n}_del ON {t};"
    f" DROP FUNCTION IF EXISTS knowledge_bump_{n}();"
    for n, t in SOURCES.items()
]


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0012_index_sync_state")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
