"""BM25 weights look each lexeme's term up by its primary key (knowledge_bm25_weights v2), and the
terms' redundant tenant-only index is dropped.

A chunk's weights joined its lexemes with the tenant's terms; for a tenant still loading, the statistics
put it at one term, so the join hashed every term of the tenant for each chunk (2.5 ms a chunk at
6,000 terms, growing with the tenant).
"""

import django.db.models.deletion
from django.db import migrations, models

from knowledge.sql import sql


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0036_tenant_acl_tokens"),
    ]

    operations = [
        migrations.AlterField(
            model_name="keywordterm",
            name="tenant",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to="knowledge.tenant",
            ),
        ),
        migrations.RunSQL(sql("bm25_weights", 2), sql("bm25_weights", 1)),
    ]
