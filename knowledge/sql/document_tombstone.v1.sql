CREATE OR REPLACE FUNCTION knowledge_document_tombstone() RETURNS trigger AS $$
BEGIN
    INSERT INTO knowledge_indextombstone (document_id, tenant_id, connector_id, created_at, attempts, last_error)
    SELECT id, tenant_id, connector_id, now(), 0, '' FROM gone
    ON CONFLICT (document_id) DO NOTHING;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
