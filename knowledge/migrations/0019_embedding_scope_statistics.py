"""Extended statistics on the vector table, so the vector lane's visibility estimates hold when
tenants share the database (see `knowledge.store.search.visibility`).

- `knowledge_chunkembedding_space` (dependencies, mcv) on tenant, connector, dimensions, model and
  the soft-delete flag: a tenant's rows carry their own connectors and models, which the planner
  otherwise multiplies as if independent.
- `knowledge_chunkembedding_tenant_acl` (mcv) on tenant and ACL tokens: the sampled frequency of
  each tenant's distinct ACLs, read by the lane (the planner cannot use it for `&&`).

ANALYZE builds them now (it samples at most 30,000 rows); autovacuum keeps them current.
"""

from django.db import migrations

TABLE = "knowledge_chunkembedding"
CREATE = f"""
CREATE STATISTICS IF NOT EXISTS knowledge_chunkembedding_space (dependencies, mcv)
    ON tenant_id, connector_id, dimensions, model, is_deleted FROM {TABLE};
CREATE STATISTICS IF NOT EXISTS knowledge_chunkembedding_tenant_acl (mcv)
    ON tenant_id, acl_tokens FROM {TABLE};
ANALYZE {TABLE};
"""
DROP = """
DROP STATISTICS IF EXISTS knowledge_chunkembedding_space;
DROP STATISTICS IF EXISTS knowledge_chunkembedding_tenant_acl;
"""


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0018_bm25_weights")]

    operations = [migrations.RunSQL(CREATE, DROP)]
