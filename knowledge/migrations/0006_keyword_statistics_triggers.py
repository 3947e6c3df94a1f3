"""Statement-level triggers keep BM25 statistics in step with every chunk write; backfills them once.

Any INSERT, UPDATE or DELETE on knowledge_chunk (including soft delete/restore, which flips
is_deleted) adds the new rows' contributions and subtracts the old ones in the same transaction,
so the statistics are correct by construction whatever code path writes chunks. Rows are upserted
in lexeme order so concurrent writers lock them in the same order.
"""

from django.db import migrations

from knowledge.sql import sql

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
                sql(f"keyword_stats_{event}", 1),
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
