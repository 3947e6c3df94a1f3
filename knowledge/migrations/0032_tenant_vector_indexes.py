"""One HNSW graph per tenant instead of one per dimension shared by all (knowledge/store/vector_indexes.py).

The shared graphs go. Tenants already past the default threshold (5,000 vectors of a dimension) get
their own index here, so an upgraded deployment never serves a big tenant from exact scans while it
waits for the maintenance task; later tenants get theirs from that task.
"""

from django.db import migrations

SHARED_DIMENSIONS = (384, 768, 1024, 1536)
THRESHOLD = 5000


def build_tenant_indexes(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT tenant_id, dimensions FROM knowledge_chunkembedding WHERE dimensions <= 2000 "
            "GROUP BY 1, 2 HAVING count(*) > %s",
            [THRESHOLD],
        )
        for tenant_id, dimensions in cursor.fetchall():
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS chunk_embedding_hnsw_t{int(tenant_id)}_d{int(dimensions)} "
                f"ON knowledge_chunkembedding USING hnsw ((embedding::vector({int(dimensions)})) "
                f"vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
                f"WHERE tenant_id = {int(tenant_id)} AND dimensions = {int(dimensions)}"
            )


def shared_index(dim: int) -> migrations.RunSQL:
    return migrations.RunSQL(
        sql=f"DROP INDEX IF EXISTS chunk_embedding_hnsw_{dim}",
        reverse_sql=(
            f"CREATE INDEX IF NOT EXISTS chunk_embedding_hnsw_{dim} ON knowledge_chunkembedding "
            f"USING hnsw ((embedding::vector({dim})) vector_cosine_ops) "
            f"WITH (m = 16, ef_construction = 64) WHERE dimensions = {dim}"
        ),
    )


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0031_drive_kind_choice")]
    operations = [
        *(shared_index(dim) for dim in SHARED_DIMENSIONS),
        migrations.RunPython(build_tenant_indexes, migrations.RunPython.noop),
    ]
