CREATE OR REPLACE FUNCTION knowledge_document_allowed_principals_tenant_check() RETURNS trigger AS $$
BEGIN 
        PERFORM knowledge_same_tenant('a document grant',
            (SELECT tenant_id FROM knowledge_document WHERE id = NEW.document_id),
            (SELECT tenant_id FROM knowledge_principal WHERE id = NEW.principal_id));
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS knowledge_document_allowed_principals_tenant_check ON knowledge_document_allowed_principals;
CREATE TRIGGER knowledge_document_allowed_principals_tenant_check BEFORE INSERT OR UPDATE ON knowledge_document_allowed_principals
    FOR EACH ROW EXECUTE FUNCTION knowledge_document_allowed_principals_tenant_check();
