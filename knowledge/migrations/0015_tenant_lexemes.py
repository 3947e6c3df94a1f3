"""The keyword lane's candidate index: a GIN over each chunk's lexemes prefixed with its tenant id.

With the tenant inside the indexed lexemes, the candidate scan needs no other index, so missing or
stale statistics (a new tenant after a bulk load) cannot make the planner scan the whole tenant.
"""

import django.contrib.postgres.indexes
import django.db.models.expressions
from django.db import migrations

from knowledge.sql import sql


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0014_chunk_page"),
    ]

    operations = [
        migrations.RunSQL(
            sql("tenant_lexemes", 1), "DROP FUNCTION IF EXISTS knowledge_tenant_lexemes(bigint, tsvector)"
        ),
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
