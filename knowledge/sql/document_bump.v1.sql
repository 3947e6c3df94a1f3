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
