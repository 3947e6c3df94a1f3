"""What the keyword lane reads of each candidate stays in the row; its GIN index keeps no pending list.

- `acl_tokens` gets STORAGE MAIN. Under EXTENDED, once content and tsvector passed the 2 kB TOAST
  target, PostgreSQL moved even a one-token ACL array out of line (3,710 of SciFact's 6,657 chunks),
  and the scope filter, which runs on every candidate, read it back from the TOAST table: about
  three buffer reads per candidate, 0.5 ms of a 2.5 ms keyword lane. Out-of-line ones are rewritten
  once (the same value; the other triggers are off meanwhile, nothing they follow changes).
- `chunk_tenant_lexemes_gin` no longer has `fastupdate`. With it, inserts queue in a pending list
  that every search scans whole until VACUUM or a 4 MB limit flushes it: after SciFact's bulk load,
  136 pages took 0.75 ms of a 3 ms keyword lane. The list is flushed once here.
"""

import django.contrib.postgres.indexes
import django.db.models.expressions
from django.db import migrations

STORAGE = "ALTER TABLE knowledge_chunk ALTER COLUMN acl_tokens SET STORAGE {storage}"
# `|| '{}'` makes a new (equal) value, which the toaster stores under the column's new policy.
REWRITE = "UPDATE knowledge_chunk SET acl_tokens = acl_tokens || '{{}}'::varchar[] WHERE {condition}"
INDEX = "chunk_tenant_lexemes_gin"


def rewrite_out_of_line(apps, schema_editor):
    connection = schema_editor.connection
    condition = (
        "pg_column_toast_chunk_id(acl_tokens) IS NOT NULL" if connection.pg_version >= 170000 else "TRUE"
    )
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # ALTER TABLE refuses pending FK checks
        cursor.execute("ALTER TABLE knowledge_chunk DISABLE TRIGGER USER")
        cursor.execute(REWRITE.format(condition=condition))
        cursor.execute("ALTER TABLE knowledge_chunk ENABLE TRIGGER USER")


def candidate_index(**options):
    return django.contrib.postgres.indexes.GinIndex(
        django.db.models.expressions.Func(
            django.db.models.expressions.F("tenant"),
            django.db.models.expressions.F("search_vector"),
            function="knowledge_tenant_lexemes",
        ),
        name=INDEX,
        **options,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0016_chunk_search_vector_inline"),
    ]

    operations = [
        migrations.RunSQL(STORAGE.format(storage="MAIN"), STORAGE.format(storage="EXTENDED")),
        migrations.RunPython(rewrite_out_of_line, migrations.RunPython.noop),
        # The index is altered in place (no rebuild); the model state learns its new option.
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f"ALTER INDEX {INDEX} SET (fastupdate = off); SELECT gin_clean_pending_list('{INDEX}'::regclass)",
                    f"ALTER INDEX {INDEX} RESET (fastupdate)",
                )
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="chunk", name=INDEX),
                migrations.AddIndex(model_name="chunk", index=candidate_index(fastupdate=False)),
            ],
        ),
    ]
