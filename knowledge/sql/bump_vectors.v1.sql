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
