"""The keyword lane's candidate index: a GIN over each chunk's lexemes prefixed with its tenant id.

With the tenant inside the indexed lexemes, the candidate scan needs no other index, so missing or
stale statistics (a new tenant after a bulk load) cannot make the planner scan the whole tenant.
"""

import django.contrib.postgres.indexes
import django.db.models.expressions
from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION knowledge_tenant_lexemes(tenant bigint, vector tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT array_to_tsvector(ARRAY(SELECT tenant || ':' || lexeme FROM unnest(tsvector_to_array(vector)) AS lexeme)) $$
"""


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0014_chunk_page"),
    ]

    operations = [
        migrations.RunSQL(FUNCTION, "DROP FUNCTION IF EXISTS knowledge_tenant_lexemes(bigint, tsvector)"),
        migrations.AddIndex(
            model_name="chunk",
            index=django.contrib.postgres.indexes.GinIndex(
                django.db.models.expressions.Func(
                    django.db.models.expressions.F("tenant"),
                    django.db.models.expressions.F("search_vector"),
                    function="knowledge_tenant_lexemes",
                ),
                name="chunk_tenant_lexemes_gin",
            ),
        ),
    ]
