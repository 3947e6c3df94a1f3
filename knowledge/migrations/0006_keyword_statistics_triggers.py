"""Statement-level triggers keep BM25 statistics in step with every chunk write; backfills them once.

Any INSERT, UPDATE or DELETE on knowledge_chunk (including soft delete/restore, which flips
is_deleted) adds the new rows' contributions and subtracts the old ones in the same transaction,
so the statistics are correct by construction whatever code path writes chunks. Rows are upserted
in lexeme order so concurrent writers lock them in the same order.
"""

from django.db import migrations

DELTA = {
    "insert": "SELECT n.*, 1 AS sign FROM new_rows n",
    "delete": "SELECT o.*, -1 AS sign FROM old_rows o",
    "update": """
        SELECT o.*, -1 AS sign FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE (o.tenant_id, o.language, o.is_deleted, o.search_vector)
              IS DISTINCT FROM (n.tenant_id, n.language, n.is_deleted, n.search_vector)
        UNION ALL
        SELECT n.*, 1 AS sign FROM new_rows n JOIN old_rows o ON o.id = n.id
        WHERE (o.tenant_id, o.language, o.is_deleted, o.search_vector)
              IS DISTINCT FROM (n.tenant_id, n.language, n.is_deleted, n.search_vector)
    """,
}

FUNCTION = """
CREATE OR REPLACE FUNCTION knowledge_keyword_stats_{event}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH delta AS ({delta}),
    live AS (SELECT * FROM delta WHERE NOT is_deleted AND search_vector IS NOT NULL)
    INSERT INTO knowledge_keywordstatistics AS s (tenant_id, language, chunk_count, total_length)
    SELECT tenant_id, language, sum(sign), sum(sign * lexeme_count) FROM live
    GROUP BY tenant_id, language ORDER BY tenant_id, language
    ON CONFLICT (tenant_id, language) DO UPDATE
        SET chunk_count = s.chunk_count + EXCLUDED.chunk_count,
            total_length = s.total_length + EXCLUDED.total_length;

    WITH delta AS ({delta}),
    live AS (SELECT * FROM delta WHERE NOT is_deleted AND search_vector IS NOT NULL)
    INSERT INTO knowledge_keywordterm AS t (tenant_id, language, lexeme, df)
    SELECT live.tenant_id, live.language, lex.lexeme, sum(live.sign)
    FROM live, unnest(live.search_vector) AS lex
    GROUP BY live.tenant_id, live.language, lex.lexeme
    ORDER BY live.tenant_id, live.language, lex.lexeme
    ON CONFLICT (tenant_id, language, lexeme) DO UPDATE SET df = t.df + EXCLUDED.df;
    RETURN NULL;
END $$;
"""

TRIGGER = """
CREATE TRIGGER knowledge_chunk_keyword_stats_{event}
AFTER {event_sql} ON knowledge_chunk
REFERENCING {tables}
FOR EACH STATEMENT EXECUTE FUNCTION knowledge_keyword_stats_{event}();
"""
TABLES = {
    "insert": "NEW TABLE AS new_rows",
    "delete": "OLD TABLE AS old_rows",
    "update": "OLD TABLE AS old_rows NEW TABLE AS new_rows",
}

BACKFILL = """
UPDATE knowledge_chunk SET lexeme_count = coalesce(
    (SELECT sum(array_length(positions, 1)) FROM unnest(search_vector)), 0)
WHERE search_vector IS NOT NULL;
DELETE FROM knowledge_keywordterm;
DELETE FROM knowledge_keywordstatistics;
INSERT INTO knowledge_keywordstatistics (tenant_id, language, chunk_count, total_length)
SELECT tenant_id, language, count(*), sum(lexeme_count) FROM knowledge_chunk
WHERE NOT is_deleted AND search_vector IS NOT NULL GROUP BY 1, 2;
INSERT INTO knowledge_keywordterm (tenant_id, language, lexeme, df)
SELECT c.tenant_id, c.language, lex.lexeme, count(*) FROM knowledge_chunk c, unnest(c.search_vector) lex
WHERE NOT c.is_deleted AND c.search_vector IS NOT NULL GROUP BY 1, 2, 3;
"""


def operations() -> list[migrations.RunSQL]:
    ops = [migrations.RunSQL(BACKFILL, migrations.RunSQL.noop)]
    for event in ("insert", "update", "delete"):
        ops.append(
            migrations.RunSQL(
                FUNCTION.format(event=event, delta=DELTA[event])
                + TRIGGER.format(event=event, event_sql=event.upper(), tables=TABLES[event]),
                reverse_sql=(
                    f"DROP TRIGGER IF EXISTS knowledge_chunk_keyword_stats_{event} ON knowledge_chunk;"
                    f"DROP FUNCTION IF EXISTS knowledge_keyword_stats_{event}();"
                ),
            )
        )
    return ops


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0005_keyword_statistics")]
    operations = operations()
