"""Each tenant's access version (knowledge/models/access_marks.py), raised by a deferred trigger.

The trigger fires for every chunk row whose ACL tokens, deletion, environment or tenant changes, and
for every deleted chunk row, at commit (INITIALLY DEFERRED); a transaction-local setting makes only
the first row of each tenant raise the version, so the mark's row lock is held only from the commit's
trigger to the commit itself.
"""

from django.db import migrations, models

FUNCTION = """
CREATE OR REPLACE FUNCTION knowledge_mark_access() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    tenant bigint := CASE WHEN TG_OP = 'DELETE' THEN OLD.tenant_id ELSE NEW.tenant_id END;
    flag text := 'knowledge.access_marked_' || tenant;
BEGIN
    IF current_setting(flag, true) IS DISTINCT FROM 'y' THEN
        PERFORM set_config(flag, 'y', true);
        INSERT INTO knowledge_tenantaccessmark AS m (tenant_id, version, changed_at)
        VALUES (tenant, 1, now())
        ON CONFLICT (tenant_id) DO UPDATE SET version = m.version + 1, changed_at = now();
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.tenant_id IS DISTINCT FROM NEW.tenant_id THEN
        flag := 'knowledge.access_marked_' || OLD.tenant_id;
        IF current_setting(flag, true) IS DISTINCT FROM 'y' THEN
            PERFORM set_config(flag, 'y', true);
            INSERT INTO knowledge_tenantaccessmark AS m (tenant_id, version, changed_at)
            VALUES (OLD.tenant_id, 1, now())
            ON CONFLICT (tenant_id) DO UPDATE SET version = m.version + 1, changed_at = now();
        END IF;
    END IF;
    RETURN NULL;
END $$;
"""
TRIGGERS = """
CREATE CONSTRAINT TRIGGER knowledge_chunk_access_update AFTER UPDATE ON knowledge_chunk
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.acl_tokens IS DISTINCT FROM NEW.acl_tokens OR OLD.is_deleted IS DISTINCT FROM NEW.is_deleted
          OR OLD.environment_id IS DISTINCT FROM NEW.environment_id OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id
          OR OLD.connector_id IS DISTINCT FROM NEW.connector_id)
    EXECUTE FUNCTION knowledge_mark_access();
CREATE CONSTRAINT TRIGGER knowledge_chunk_access_delete AFTER DELETE ON knowledge_chunk
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION knowledge_mark_access();
"""
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
        migrations.RunSQL(FUNCTION + TRIGGERS, reverse_sql=DROP),
    ]
