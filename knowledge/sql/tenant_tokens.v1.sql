CREATE OR REPLACE FUNCTION knowledge_tenant_tokens(tenant bigint, tokens varchar[]) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT ARRAY(SELECT tenant || ':' || token FROM unnest(tokens) AS token) $$
