"""The API key a request names, with its tenant and principal: one statement built once per process.

Every API request authenticates, and the ORM spent more time compiling the query and building its
three objects (1.16 ms p50) than PostgreSQL took to answer it (0.43 ms).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.db import connection
from django.db.models import Field, Model

from knowledge.models import ApiKey, Principal, Tenant

JOINED: tuple[tuple[type[Model], str], ...] = ((ApiKey, "k"), (Tenant, "t"), (Principal, "p"))


def _columns(model: type[Model], alias: str) -> str:
    return ", ".join(f'{alias}."{field.column}"' for field in model._meta.concrete_fields)


@lru_cache(maxsize=1)
def _statement() -> str:
    tables = {model: model._meta.db_table for model, _ in JOINED}
    return (
        f"SELECT {', '.join(_columns(model, alias) for model, alias in JOINED)} "
        f'FROM "{tables[ApiKey]}" k JOIN "{tables[Tenant]}" t ON t.id = k.tenant_id '
        f'LEFT JOIN "{tables[Principal]}" p ON p.id = k.principal_id WHERE k.lookup_id = %s'
    )


def _instance(model: type[Model], values: tuple[Any, ...]) -> Any:
    """The model instance of a row's values, converted as the ORM converts them."""
    fields: list[Field[Any, Any]] = list(model._meta.concrete_fields)
    converted = []
    for field, value in zip(fields, values, strict=True):
        for converter in field.get_db_converters(connection):
            value = converter(value, field, connection)
        converted.append(value)
    return model.from_db(connection.alias, [f.attname for f in fields], converted)


def api_key_by_lookup_id(lookup_id: str) -> ApiKey | None:
    """The key with this lookup id (revoked ones too), its tenant and principal already loaded."""
    with connection.cursor() as cursor:
        cursor.execute(_statement(), [lookup_id])
        row = cursor.fetchone()
    if row is None:
        return None
    sizes = [len(model._meta.concrete_fields) for model, _ in JOINED]
    key_values, tenant_values = row[: sizes[0]], row[sizes[0] : sizes[0] + sizes[1]]
    principal_values = row[sizes[0] + sizes[1] :]
    key: ApiKey = _instance(ApiKey, key_values)
    ApiKey._meta.get_field("tenant").set_cached_value(key, _instance(Tenant, tenant_values))  # type: ignore[union-attr]
    principal = _instance(Principal, principal_values) if principal_values[0] is not None else None
    ApiKey._meta.get_field("principal").set_cached_value(key, principal)  # type: ignore[union-attr]
    return key
