CREATE OR REPLACE FUNCTION knowledge_document_tenant_check() RETURNS trigger AS $$
BEGIN 
        PERFORM knowledge_same_tenant('a document connector', NEW.tenant_id,
            (SELECT tenant_id FROM knowledge_connector WHERE id = NEW.connector_id));
        IF NEW.environment_id IS NOT NULL THEN
            PERFORM knowledge_same_tenant('a document environment', NEW.tenant_id,
                (SELECT tenant_id FROM knowledge_environment WHERE id = NEW.environment_id));
        END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS knowledge_document_tenant_check ON knowledge_document;
CREATE TRIGGER knowledge_document_tenant_check BEFORE INSERT OR UPDATE OF tenant_id, connector_id, environment_id ON knowledge_document
    FOR EACH ROW EXECUTE FUNCTION knowledge_document_tenant_check();
