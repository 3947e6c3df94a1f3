CREATE OR REPLACE FUNCTION knowledge_tenant_lexemes(tenant bigint, vector tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT array_to_tsvector(ARRAY(SELECT tenant || ':' || lexeme FROM unnest(tsvector_to_array(vector)) AS lexeme)) $$
