CREATE OR REPLACE FUNCTION knowledge_bump_chunks() RETURNS trigger AS $$
BEGIN
    UPDATE knowledge_document
    SET index_version = index_version + 1, index_changed_at = now(), index_bumped_by = pg_current_xact_id()::text
    WHERE id IN (SELECT DISTINCT document_id FROM changed)
      AND index_bumped_by IS DISTINCT FROM pg_current_xact_id()::text;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS knowledge_bump_chunks_ins ON knowledge_chunk;
DROP TRIGGER IF EXISTS knowledge_bump_chunks_del ON knowledge_chunk;
CREATE TRIGGER knowledge_bump_chunks_ins AFTER INSERT ON knowledge_chunk
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_bump_chunks();
CREATE TRIGGER knowledge_bump_chunks_del AFTER DELETE ON knowledge_chunk
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_bump_chunks();
