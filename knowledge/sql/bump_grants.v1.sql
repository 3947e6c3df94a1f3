CREATE OR REPLACE FUNCTION knowledge_bump_grants() RETURNS trigger AS $$
BEGIN
    UPDATE knowledge_document
    SET index_version = index_version + 1, index_changed_at = now(), index_bumped_by = pg_current_xact_id()::text
    WHERE id IN (SELECT DISTINCT document_id FROM changed)
      AND index_bumped_by IS DISTINCT FROM pg_current_xact_id()::text;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS knowledge_bump_grants_ins ON knowledge_document_allowed_principals;
DROP TRIGGER IF EXISTS knowledge_bump_grants_del ON knowledge_document_allowed_principals;
CREATE TRIGGER knowledge_bump_grants_ins AFTER INSERT ON knowledge_document_allowed_principals
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_bump_grants();
CREATE TRIGGER knowledge_bump_grants_del AFTER DELETE ON knowledge_document_allowed_principals
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_bump_grants();
