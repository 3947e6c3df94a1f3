"""Partial HNSW cosine indexes, one per indexed dimension, and the default tenant."""

from django.db import migrations

DIMENSIONS = (384, 768, 1024, 1536)


def create_primary_tenant(apps, schema_editor):
    Tenant = apps.get_model("knowledge", "Tenant")
    Tenant.objects.get_or_create(slug="primary", defaults={"name": "Primary"})


def hnsw_sql(dim: int) -> migrations.RunSQL:
    return migrations.RunSQL(
        sql=(
            f"CREATE INDEX IF NOT EXISTS chunk_embedding_hnsw_{dim} ON knowledge_chunkembedding "
            f"USING hnsw ((embedding::vector({dim})) vector_cosine_ops) "
            f"WITH (m = 16, ef_construction = 64) WHERE dimensions = {dim}"
        ),
        reverse_sql=f"DROP INDEX IF EXISTS chunk_embedding_hnsw_{dim}",
    )


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0002_models")]
    operations = [
        *(hnsw_sql(dim) for dim in DIMENSIONS),
        migrations.RunPython(create_primary_tenant, migrations.RunPython.noop),
    ]
