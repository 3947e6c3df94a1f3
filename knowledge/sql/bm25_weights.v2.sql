CREATE OR REPLACE FUNCTION knowledge_bm25_weights(
    tenant bigint, lang text, vector tsvector, dl integer, OUT norm real, OUT weights sparsevec
) LANGUAGE plpgsql STABLE AS $$
DECLARE
    avgdl float8;
BEGIN
    IF vector IS NULL OR dl IS NULL OR dl <= 0 OR length(vector) > 500 THEN
        RETURN;
    END IF;
    SELECT s.total_length::float8 / s.chunk_count INTO avgdl FROM knowledge_keywordstatistics s
    WHERE s.tenant_id = tenant AND s.language = lang AND s.chunk_count > 0 AND s.total_length > 0;
    norm := (1 + 1.2 * (0.25 + 0.75 * dl / coalesce(avgdl, dl)))::real;
    -- The chunk's terms are read by the primary key, all lexemes in one index scan, before they meet
    -- the lexemes: v1 joined the lexemes with the whole terms table, planned from statistics that put a
    -- tenant still loading at one term, and so hashed every term of the tenant for each chunk (2.5 ms a
    -- chunk at 6,000 terms, and growing with the tenant).
    WITH terms AS MATERIALIZED (
        SELECT t.lexeme, t.term_id FROM knowledge_keywordterm t
        WHERE t.tenant_id = tenant AND t.language = lang AND t.lexeme = ANY (tsvector_to_array(vector))
    )
    SELECT CASE WHEN count(t.term_id) = length(vector) AND max(t.term_id) < 1000000000 THEN
               ('{' || string_agg(t.term_id || ':' || (n.tf * 2.2 / (n.tf + norm::float8 - 1))::real, ','
                                   ORDER BY t.term_id)
                || '}/1000000000')::sparsevec
           END
    INTO weights
    FROM unnest(vector) AS l
    CROSS JOIN LATERAL (SELECT array_length(l.positions, 1)::float8 AS tf) n
    LEFT JOIN terms t ON t.lexeme = l.lexeme;
    IF weights IS NULL THEN
        norm := NULL;
    END IF;
END $$;
