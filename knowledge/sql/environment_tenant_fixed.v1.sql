CREATE OR REPLACE FUNCTION knowledge_environment_tenant_fixed() RETURNS trigger AS $$
BEGIN
    IF NEW.tenant_id IS DISTINCT FROM OLD.tenant_id THEN
        RAISE EXCEPTION 'knowledge: the tenant of knowledge_environment % cannot change', OLD.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS knowledge_environment_tenant_fixed ON knowledge_environment;
CREATE TRIGGER knowledge_environment_tenant_fixed BEFORE UPDATE OF tenant_id ON knowledge_environment
    FOR EACH ROW EXECUTE FUNCTION knowledge_environment_tenant_fixed();
