CREATE OR REPLACE FUNCTION knowledge_principal_groups_tenant_check() RETURNS trigger AS $$
BEGIN 
        PERFORM knowledge_same_tenant('a group membership',
            (SELECT tenant_id FROM knowledge_principal WHERE id = NEW.from_principal_id),
            (SELECT tenant_id FROM knowledge_principal WHERE id = NEW.to_principal_id));
        IF (SELECT kind FROM knowledge_principal WHERE id = NEW.to_principal_id) <> 'group' THEN
            RAISE EXCEPTION 'knowledge: principal % is not a group', NEW.to_principal_id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS knowledge_principal_groups_tenant_check ON knowledge_principal_groups;
CREATE TRIGGER knowledge_principal_groups_tenant_check BEFORE INSERT OR UPDATE ON knowledge_principal_groups
    FOR EACH ROW EXECUTE FUNCTION knowledge_principal_groups_tenant_check();
