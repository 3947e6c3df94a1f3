"""Tombstones carry a version above the deleted document's last one, so an index applies the deletion
over any push of an older state that lands after it."""

from django.db import migrations, models

TOMBSTONE = """
CREATE OR REPLACE FUNCTION knowledge_document_tombstone() RETURNS trigger AS $$
BEGIN
    INSERT INTO knowledge_indextombstone
        (document_id, tenant_id, connector_id, version, created_at, attempts, last_error)
    SELECT id, tenant_id, connector_id, index_version + 1, now(), 0, '' FROM gone
    ON CONFLICT (document_id) DO NOTHING;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
"""

PREVIOUS = """
CREATE OR REPLACE FUNCTION knowledge_document_tombstone() RETURNS trigger AS $$
BEGIN
    INSERT INTO knowledge_indextombstone (document_id, tenant_id, connector_id, created_at, attempts, last_error)
    SELECT id, tenant_id, connector_id, now(), 0, '' FROM gone
    ON CONFLICT (document_id) DO NOTHING;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
"""


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0020_staff_page_permissions")]

    operations = [
        migrations.AddField(
            model_name="indextombstone",
            name="version",
            field=models.BigIntegerField(db_default=0, default=0),
        ),
        migrations.RunSQL(TOMBSTONE, PREVIOUS),
    ]
