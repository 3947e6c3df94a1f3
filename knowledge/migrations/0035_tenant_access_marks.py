"""Each tenant's access version (knowledge/models/access_marks.py), raised by a deferred trigger.

The trigger fires for every chunk row whose ACL tokens, deletion, environment or tenant changes, and
for every deleted chunk row, at commit (INITIALLY DEFERRED); a transaction-local setting makes only
the first row of each tenant raise the version, so the mark's row lock is held only from the commit's
trigger to the commit itself.
"""

from django.db import migrations, models

from knowledge.sql import sql

DROP = """
DROP TRIGGER IF EXISTS knowledge_chunk_access_update ON knowledge_chunk;
DROP TRIGGER IF EXISTS knowledge_chunk_access_delete ON knowledge_chunk;
DROP FUNCTION IF EXISTS knowledge_mark_access();
"""


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0034_embedding_rows_inline")]

    operations = [
        migrations.CreateModel(
            name="TenantAccessMark",
            fields=[
                ("tenant_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("version", models.BigIntegerField(default=0)),
                ("changed_at", models.DateTimeField(auto_now=True)),
            ],
        ),
        migrations.RunSQL(sql("mark_access", 1), reverse_sql=DROP),
    ]
