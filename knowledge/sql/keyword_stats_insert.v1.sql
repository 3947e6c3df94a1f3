CREATE OR REPLACE FUNCTION knowledge_keyword_stats_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH delta AS (SELECT n.*, 1 AS sign FROM new_rows n),
    live AS (SELECT * FROM delta WHERE NOT is_deleted AND search_vector IS NOT NULL)
    INSERT INTO knowledge_keywordstatistics AS s (tenant_id, language, chunk_count, total_length)
    SELECT tenant_id, language, sum(sign), sum(sign * lexeme_count) FROM live
    GROUP BY tenant_id, language ORDER BY tenant_id, language
    ON CONFLICT (tenant_id, language) DO UPDATE
        SET chunk_count = s.chunk_count + EXCLUDED.chunk_count,
            total_length = s.total_length + EXCLUDED.total_length;

    WITH delta AS (SELECT n.*, 1 AS sign FROM new_rows n),
    live AS (SELECT * FROM delta WHERE NOT is_deleted AND search_vector IS NOT NULL)
    INSERT INTO knowledge_keywordterm AS t (tenant_id, language, lexeme, df)
    SELECT live.tenant_id, live.language, lex.lexeme, sum(live.sign)
    FROM live, unnest(live.search_vector) AS lex
    GROUP BY live.tenant_id, live.language, lex.lexeme
    ORDER BY live.tenant_id, live.language, lex.lexeme
    ON CONFLICT (tenant_id, language, lexeme) DO UPDATE SET df = t.df + EXCLUDED.df;
    RETURN NULL;
END $$;

CREATE TRIGGER knowledge_chunk_keyword_stats_insert
AFTER INSERT ON knowledge_chunk
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION knowledge_keyword_stats_insert();
