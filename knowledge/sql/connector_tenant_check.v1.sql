CREATE OR REPLACE FUNCTION knowledge_connector_tenant_check() RETURNS trigger AS $$
BEGIN 
        IF NEW.environment_id IS NOT NULL THEN
            PERFORM knowledge_same_tenant('a connector environment', NEW.tenant_id,
                (SELECT tenant_id FROM knowledge_environment WHERE id = NEW.environment_id));
        END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS knowledge_connector_tenant_check ON knowledge_connector;
CREATE TRIGGER knowledge_connector_tenant_check BEFORE INSERT OR UPDATE OF tenant_id, environment_id ON knowledge_connector
    FOR EACH ROW EXECUTE FUNCTION knowledge_connector_tenant_check();
