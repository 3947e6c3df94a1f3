CREATE OR REPLACE FUNCTION knowledge_apikey_tenant_check() RETURNS trigger AS $$
BEGIN 
        IF NEW.principal_id IS NOT NULL THEN
            PERFORM knowledge_same_tenant('an API key identity', NEW.tenant_id,
                (SELECT tenant_id FROM knowledge_principal WHERE id = NEW.principal_id));
        END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS knowledge_apikey_tenant_check ON knowledge_apikey;
CREATE TRIGGER knowledge_apikey_tenant_check BEFORE INSERT OR UPDATE OF tenant_id, principal_id ON knowledge_apikey
    FOR EACH ROW EXECUTE FUNCTION knowledge_apikey_tenant_check();
