CREATE OR REPLACE FUNCTION knowledge_documentpolicy_principals_tenant_check() RETURNS trigger AS $$
BEGIN
    PERFORM knowledge_same_tenant('a document policy grant',
        (SELECT c.tenant_id FROM knowledge_documentpolicy p JOIN knowledge_connector c ON c.id = p.connector_id
         WHERE p.id = NEW.documentpolicy_id),
        (SELECT tenant_id FROM knowledge_principal WHERE id = NEW.principal_id));
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS knowledge_documentpolicy_principals_tenant_check ON knowledge_documentpolicy_principals;
CREATE TRIGGER knowledge_documentpolicy_principals_tenant_check
    BEFORE INSERT OR UPDATE ON knowledge_documentpolicy_principals
    FOR EACH ROW EXECUTE FUNCTION knowledge_documentpolicy_principals_tenant_check();
