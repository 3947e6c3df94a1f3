CREATE OR REPLACE FUNCTION knowledge_connector_default_principals_tenant_check() RETURNS trigger AS $$
BEGIN 
        PERFORM knowledge_same_tenant('a connector default grant',
            (SELECT tenant_id FROM knowledge_connector WHERE id = NEW.connector_id),
            (SELECT tenant_id FROM knowledge_principal WHERE id = NEW.principal_id));
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS knowledge_connector_default_principals_tenant_check ON knowledge_connector_default_principals;
CREATE TRIGGER knowledge_connector_default_principals_tenant_check BEFORE INSERT OR UPDATE ON knowledge_connector_default_principals
    FOR EACH ROW EXECUTE FUNCTION knowledge_connector_default_principals_tenant_check();
