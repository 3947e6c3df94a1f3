CREATE OR REPLACE FUNCTION knowledge_document_tenant_fixed() RETURNS trigger AS $$
BEGIN
    IF NEW.tenant_id IS DISTINCT FROM OLD.tenant_id THEN
        RAISE EXCEPTION 'knowledge: the tenant of knowledge_document % cannot change', OLD.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS knowledge_document_tenant_fixed ON knowledge_document;
CREATE TRIGGER knowledge_document_tenant_fixed BEFORE UPDATE OF tenant_id ON knowledge_document
    FOR EACH ROW EXECUTE FUNCTION knowledge_document_tenant_fixed();
