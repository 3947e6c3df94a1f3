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

BUMP_ON_UPDATE = """
CREATE OR REPLACE FUNCTION knowledge_document_bump() RETURNS trigger AS $$
BEGIN
    IF (NEW.is_public, NEW.environment_id, NEW.deleted_at IS NULL, NEW.content_hash, NEW.title,
        NEW.language, NEW.connector_id, NEW.tenant_id)
       IS DISTINCT FROM
       (OLD.is_public, OLD.environment_id, OLD.deleted_at IS NULL, OLD.content_hash, OLD.title,
        OLD.language, OLD.connector_id, OLD.tenant_id) THEN
        IF OLD.index_bumped_by IS DISTINCT FROM pg_current_xact_id()::text THEN
            NEW.index_version := greatest(NEW.index_version, OLD.index_version + 1);
            NEW.index_changed_at := now();
            NEW.index_bumped_by := pg_current_xact_id()::text;
        END IF;
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS knowledge_document_bump ON knowledge_document;
CREATE TRIGGER knowledge_document_bump BEFORE UPDATE ON knowledge_document
    FOR EACH ROW EXECUTE FUNCTION knowledge_document_bump();
"""

# Statement-level, with transition tables: one UPDATE per statement, however many rows it touched.
BUMP_FROM = """
CREATE OR REPLACE FUNCTION knowledge_bump_{name}() RETURNS trigger AS $$
BEGIN
    UPDATE knowledge_document
    SET index_version = index_version + 1, index_changed_at = now(), index_bumped_by = pg_current_xact_id()::text
    WHERE id IN (SELECT DISTINCT document_id FROM changed)
      AND index_bumped_by IS DISTINCT FROM pg_current_xact_id()::text;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS knowledge_bump_{name}_ins ON {table};
DROP TRIGGER IF EXISTS knowledge_bump_{name}_del ON {table};
CREATE TRIGGER knowledge_bump_{name}_ins AFTER INSERT ON {table}
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_bump_{name}();
CREATE TRIGGER knowledge_bump_{name}_del AFTER DELETE ON {table}
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_bump_{name}();
"""
SOURCES = {"grants": "knowledge_document_allowed_principals", "chunks": "knowledge_chunk"}

# Vectors belong to chunks: a new, replaced or pruned vector changes what its document's index holds.
BUMP_FROM_VECTORS = """
CREATE OR REPLACE FUNCTION knowledge_bump_vectors() RETURNS trigger AS $$
BEGIN
    UPDATE knowledge_document
    SET index_version = index_version + 1, index_changed_at = now(), index_bumped_by = pg_current_xact_id()::text
    WHERE id IN (SELECT DISTINCT c.document_id FROM knowledge_chunk c JOIN changed v ON v.chunk_id = c.id)
      AND index_bumped_by IS DISTINCT FROM pg_current_xact_id()::text;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS knowledge_bump_vectors_ins ON knowledge_chunkembedding;
DROP TRIGGER IF EXISTS knowledge_bump_vectors_upd ON knowledge_chunkembedding;
DROP TRIGGER IF EXISTS knowledge_bump_vectors_del ON knowledge_chunkembedding;
CREATE TRIGGER knowledge_bump_vectors_ins AFTER INSERT ON knowledge_chunkembedding
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_bump_vectors();
CREATE TRIGGER knowledge_bump_vectors_upd AFTER UPDATE ON knowledge_chunkembedding
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_bump_vectors();
CREATE TRIGGER knowledge_bump_vectors_del AFTER DELETE ON knowledge_chunkembedding
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_bump_vectors();
"""

TOMBSTONE = """
CREATE OR REPLACE FUNCTION knowledge_document_tombstone() RETURNS trigger AS $$
BEGIN
    INSERT INTO knowledge_indextombstone (document_id, tenant_id, connector_id, created_at, attempts, last_error)
    SELECT id, tenant_id, connector_id, now(), 0, '' FROM gone
    ON CONFLICT (document_id) DO NOTHING;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS knowledge_document_tombstone ON knowledge_document;
CREATE TRIGGER knowledge_document_tombstone AFTER DELETE ON knowledge_document
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION knowledge_document_tombstone();
"""

FORWARD = [BUMP_ON_UPDATE, TOMBSTONE, BUMP_FROM_VECTORS]
FORWARD += [BUMP_FROM.format(name=n, table=t) for n, t in SOURCES.items()]
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
