CREATE OR REPLACE FUNCTION knowledge_same_tenant(kind text, a bigint, b bigint) RETURNS void AS $$
BEGIN
    IF a IS DISTINCT FROM b THEN
        RAISE EXCEPTION 'knowledge: % crosses tenants (% vs %)', kind, a, b
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
END $$ LANGUAGE plpgsql;
