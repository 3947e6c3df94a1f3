CREATE OR REPLACE FUNCTION knowledge_keyword_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH delta AS (SELECT o.*, -1 AS sign FROM old_rows o),
    live AS (SELECT * FROM delta WHERE NOT is_deleted AND search_vector IS NOT NULL)
    INSERT INTO knowledge_keywordstatistics AS s (tenant_id, language, chunk_count, total_length)
    SELECT tenant_id, language, sum(sign), sum(sign * lexeme_count) FROM live
    GROUP BY tenant_id, language ORDER BY tenant_id, language
    ON CONFLICT (tenant_id, language) DO UPDATE
        SET chunk_count = s.chunk_count + EXCLUDED.chunk_count,
            total_length = s.total_length + EXCLUDED.total_length;

    WITH delta AS (SELECT o.*, -1 AS sign FROM old_rows o),
    live AS (SELECT * FROM delta WHERE NOT is_deleted AND search_vector IS NOT NULL)
    INSERT INTO knowledge_keywordterm AS t (tenant_id, language, lexeme, df)
    SELECT live.tenant_id, live.language, lex.lexeme, sum(live.sign)
    FROM live, unnest(live.search_vector) AS lex
    GROUP BY live.tenant_id, live.language, lex.lexeme
    ORDER BY live.tenant_id, live.language, lex.lexeme
    ON CONFLICT (tenant_id, language, lexeme) DO UPDATE SET df = t.df + EXCLUDED.df;
    RETURN NULL;
END $$;

CREATE TRIGGER knowledge_chunk_keyword_stats_delete
AFTER DELETE ON knowledge_chunk
REFERENCING OLD TABLE AS old_rows
FOR EACH STATEMENT EXECUTE FUNCTION knowledge_keyword_stats_delete();
