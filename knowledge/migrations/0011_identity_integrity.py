"""The database refuses identities that cross tenants, whatever writes them (ORM, admin, raw SQL).

Triggers check every link between a tenant's objects: ACL grants (effective, source, connector
default), API-key identities, group memberships, and a document's connector and environment. The
tenant of a connector, principal, environment and document never changes once set.
"""

from django.db import migrations

from knowledge.sql import sql

# Tables whose rows link a tenant's objects: knowledge/sql/<table>_tenant_check.v1.sql checks each link.
LINKING = [
    "document_allowed_principals",
    "document_source_principals",
    "connector_default_principals",
    "principal_groups",
    "apikey",
    "document",
    "connector",
]
# Tables whose tenant never changes: knowledge/sql/<table>_tenant_fixed.v1.sql refuses the update.
IMMUTABLE_TENANT = ["connector", "principal", "environment", "document"]


def _drop(table: str, suffix: str) -> str:
    name = f"knowledge_{table}_{suffix}"
    return f"DROP TRIGGER IF EXISTS {name} ON knowledge_{table}; DROP FUNCTION IF EXISTS {name}();"


FORWARD = [sql("same_tenant", 1)]
FORWARD += [sql(f"{table}_tenant_check", 1) for table in LINKING]
FORWARD += [sql(f"{table}_tenant_fixed", 1) for table in IMMUTABLE_TENANT]
BACKWARD = [_drop(t, "tenant_check") for t in LINKING] + [_drop(t, "tenant_fixed") for t in IMMUTABLE_TENANT]
BACKWARD += ["DROP FUNCTION IF EXISTS knowledge_same_tenant(text, bigint, bigint);"]


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0010_acl_ownership")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
