CREATE OR REPLACE FUNCTION knowledge_document_tombstone() RETURNS trigger AS $$
BEGIN
    INSERT INTO knowledge_indextombstone
        (document_id, tenant_id, connector_id, version, created_at, attempts, last_error)
    SELECT id, tenant_id, connector_id, index_version + 1, now(), 0, '' FROM gone
    ON CONFLICT (document_id) DO NOTHING;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
