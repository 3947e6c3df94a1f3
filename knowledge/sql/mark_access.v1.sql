CREATE OR REPLACE FUNCTION knowledge_mark_access() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    tenant bigint := CASE WHEN TG_OP = 'DELETE' THEN OLD.tenant_id ELSE NEW.tenant_id END;
    flag text := 'knowledge.access_marked_' || tenant;
BEGIN
    IF current_setting(flag, true) IS DISTINCT FROM 'y' THEN
        PERFORM set_config(flag, 'y', true);
        INSERT INTO knowledge_tenantaccessmark AS m (tenant_id, version, changed_at)
        VALUES (tenant, 1, now())
        ON CONFLICT (tenant_id) DO UPDATE SET version = m.version + 1, changed_at = now();
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.tenant_id IS DISTINCT FROM NEW.tenant_id THEN
        flag := 'knowledge.access_marked_' || OLD.tenant_id;
        IF current_setting(flag, true) IS DISTINCT FROM 'y' THEN
            PERFORM set_config(flag, 'y', true);
            INSERT INTO knowledge_tenantaccessmark AS m (tenant_id, version, changed_at)
            VALUES (OLD.tenant_id, 1, now())
            ON CONFLICT (tenant_id) DO UPDATE SET version = m.version + 1, changed_at = now();
        END IF;
    END IF;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER knowledge_chunk_access_update AFTER UPDATE ON knowledge_chunk
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.acl_tokens IS DISTINCT FROM NEW.acl_tokens OR OLD.is_deleted IS DISTINCT FROM NEW.is_deleted
          OR OLD.environment_id IS DISTINCT FROM NEW.environment_id OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id
          OR OLD.connector_id IS DISTINCT FROM NEW.connector_id)
    EXECUTE FUNCTION knowledge_mark_access();
CREATE CONSTRAINT TRIGGER knowledge_chunk_access_delete AFTER DELETE ON knowledge_chunk
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION knowledge_mark_access();
