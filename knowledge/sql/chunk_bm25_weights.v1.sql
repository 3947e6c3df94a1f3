CREATE OR REPLACE FUNCTION knowledge_chunk_bm25_weights() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT w.norm, w.weights INTO NEW.bm25_norm, NEW.bm25_weights
    FROM knowledge_bm25_weights(NEW.tenant_id, NEW.language, NEW.search_vector, NEW.lexeme_count) w;
    RETURN NEW;
END $$;

CREATE TRIGGER knowledge_chunk_bm25_weights
BEFORE INSERT OR UPDATE OF search_vector, lexeme_count, language, tenant_id, bm25_weights, bm25_norm
ON knowledge_chunk FOR EACH ROW EXECUTE FUNCTION knowledge_chunk_bm25_weights();
