"""The database refuses identities that cross tenants, whatever writes them (ORM, admin, raw SQL).

Triggers check every link between a tenant's objects: ACL grants (effective, source, connector
default), API-key identities, group memberships, and a document's connector and environment. The
tenant of a connector, principal, environment and document never changes once set.
"""

from django.db import migrations

CHECK_FUNCTION = """
CREATE OR REPLACE FUNCTION knowledge_same_tenant(kind text, a bigint, b bigint) RETURNS void AS $$
BEGIN
    IF a IS DISTINCT FROM b THEN
        RAISE EXCEPTION 'knowledge: % crosses tenants (% vs %)', kind, a, b
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
END $$ LANGUAGE plpgsql;
"""

# (table, trigger body) pairs; each body raises on a cross-tenant link.
LINKS = {
    "knowledge_document_allowed_principals": """
        PERFORM knowledge_same_tenant('a document grant',
            (SELECT tenant_id FROM knowledge_document WHERE id = NEW.document_id),
            (SELECT tenant_id FROM knowledge_principal WHERE id = NEW.principal_id));""",
    "knowledge_document_source_principals": """
        PERFORM knowledge_same_tenant('a document source grant',
            (SELECT tenant_id FROM knowledge_document WHERE id = NEW.document_id),
            (SELECT tenant_id FROM knowledge_principal WHERE id = NEW.principal_id));""",
    "knowledge_connector_default_principals": """
        PERFORM knowledge_same_tenant('a connector default grant',
            (SELECT tenant_id FROM knowledge_connector WHERE id = NEW.connector_id),
            (SELECT tenant_id FROM knowledge_principal WHERE id = NEW.principal_id));""",
    "knowledge_principal_groups": """
        PERFORM knowledge_same_tenant('a group membership',
            (SELECT tenant_id FROM knowledge_principal WHERE id = NEW.from_principal_id),
            (SELECT tenant_id FROM knowledge_principal WHERE id = NEW.to_principal_id));
        IF (SELECT kind FROM knowledge_principal WHERE id = NEW.to_principal_id) <> 'group' THEN
            RAISE EXCEPTION 'knowledge: principal % is not a group', NEW.to_principal_id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;""",
    "knowledge_apikey": """
        IF NEW.principal_id IS NOT NULL THEN
            PERFORM knowledge_same_tenant('an API key identity', NEW.tenant_id,
                (SELECT tenant_id FROM knowledge_principal WHERE id = NEW.principal_id));
        END IF;""",
    "knowledge_document": """
        PERFORM knowledge_same_tenant('a document connector', NEW.tenant_id,
            (SELECT tenant_id FROM knowledge_connector WHERE id = NEW.connector_id));
        IF NEW.environment_id IS NOT NULL THEN
            PERFORM knowledge_same_tenant('a document environment', NEW.tenant_id,
                (SELECT tenant_id FROM knowledge_environment WHERE id = NEW.environment_id));
        END IF;""",
    "knowledge_connector": """
        IF NEW.environment_id IS NOT NULL THEN
            PERFORM knowledge_same_tenant('a connector environment', NEW.tenant_id,
                (SELECT tenant_id FROM knowledge_environment WHERE id = NEW.environment_id));
        END IF;""",
}
IMMUTABLE_TENANT = [
    "knowledge_connector",
    "knowledge_principal",
    "knowledge_environment",
    "knowledge_document",
]


# Row updates of these tables fire the check only when a linking column changes.
WATCHED = {
    "knowledge_apikey": "tenant_id, principal_id",
    "knowledge_document": "tenant_id, connector_id, environment_id",
    "knowledge_connector": "tenant_id, environment_id",
}


def _link_trigger(table: str, body: str) -> str:
    columns = WATCHED.get(table)
    events = f"INSERT OR UPDATE OF {columns}" if columns else "INSERT OR UPDATE"
    return f"""
CREATE OR REPLACE FUNCTION {table}_tenant_check() RETURNS trigger AS $$
BEGIN {body}
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS {table}_tenant_check ON {table};
CREATE TRIGGER {table}_tenant_check BEFORE {events} ON {table}
    FOR EACH ROW EXECUTE FUNCTION {table}_tenant_check();
"""


def _immutable_trigger(table: str) -> str:
    return f"""
CREATE OR REPLACE FUNCTION {table}_tenant_fixed() RETURNS trigger AS $$
BEGIN
    IF NEW.tenant_id IS DISTINCT FROM OLD.tenant_id THEN
        RAISE EXCEPTION 'knowledge: the tenant of {table} % cannot change', OLD.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS {table}_tenant_fixed ON {table};
CREATE TRIGGER {table}_tenant_fixed BEFORE UPDATE OF tenant_id ON {table}
    FOR EACH ROW EXECUTE FUNCTION {table}_tenant_fixed();
"""


def _drop(table: str, suffix: str) -> str:
    return f"DROP TRIGGER IF EXISTS {table}_{suffix} ON {table}; DROP FUNCTION IF EXISTS {table}_{suffix}();"


FORWARD = [CHECK_FUNCTION]
FORWARD += [_link_trigger(table, body) for table, body in LINKS.items()]
FORWARD += [_immutable_trigger(table) for table in IMMUTABLE_TENANT]
BACKWARD = [_drop(t, "tenant_check") for t in LINKS] + [_drop(t, "tenant_fixed") for t in IMMUTABLE_TENANT]
BACKWARD += ["DROP FUNCTION IF EXISTS knowledge_same_tenant(text, bigint, bigint);"]


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0010_acl_ownership")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
