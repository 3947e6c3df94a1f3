"""Principal names in their canonical form (knowledge/names.py): spellings of one user or group that
already exist as separate principals are merged into the oldest, each merge printed.

A merge moves every grant, membership, policy and key of the duplicates to the kept principal and
rewrites the duplicates' tokens on the chunks (the bump triggers then mark the documents for the
index). It can only widen what the merged identity sees to the union of what its spellings saw,
which is what the spellings meant.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from typing import Any

from django.db import migrations

_SPACES = re.compile(r"\s+")
PREFIX = {"user": "u:", "group": "g:"}


def canonical(kind: str, value: str) -> str:
    """knowledge.names.principal_name as of this migration (a migration keeps its own copy)."""
    text = unicodedata.normalize("NFKC", value)
    return text.strip().casefold() if kind == "user" else _SPACES.sub(" ", text).strip()


def _references(apps: Any, principal: Any) -> tuple[list[tuple[str, str, str]], list[tuple[Any, str]]]:
    """(through table, column naming a principal, other column) of every many-to-many to principals,
    and (model, field) of every foreign key to them."""
    through, keys = [], []
    for model in apps.get_app_config("knowledge").get_models():
        for field in model._meta.local_many_to_many:
            if field.related_model is principal:
                table = field.remote_field.through._meta.db_table
                ours, theirs = field.m2m_column_name(), field.m2m_reverse_name()
                through.append((table, theirs, ours))
                if model is principal:  # a self relation names principals on both sides
                    through.append((table, ours, theirs))
        for field in model._meta.local_fields:
            if field.is_relation and field.many_to_one and field.related_model is principal:
                keys.append((model, field.name))
    return through, keys


def merge_spellings(apps: Any, schema_editor: Any) -> None:
    Principal = apps.get_model("knowledge", "Principal")
    Chunk = apps.get_model("knowledge", "Chunk")
    through, keys = _references(apps, Principal)
    found: dict[tuple[int, str, str], list[tuple[int, str]]] = defaultdict(list)
    for pk, tenant_id, kind, external_id in Principal.objects.order_by("pk").values_list(
        "pk", "tenant_id", "kind", "external_id"
    ):
        found[(tenant_id, kind, canonical(kind, external_id))].append((pk, external_id))
    with schema_editor.connection.cursor() as cursor:
        for (tenant_id, kind, name), rows in found.items():
            keep, duplicates = rows[0][0], [pk for pk, _ in rows[1:]]
            if duplicates:
                spellings = ", ".join(repr(spelling) for _, spelling in rows)
                print(
                    f"\n  merged {kind} principals {spellings} of tenant {tenant_id} into {name!r} (id {keep})"
                )
                for table, column, other in through:
                    cursor.execute(
                        f'INSERT INTO "{table}" ("{column}", "{other}") SELECT %s, "{other}" FROM "{table}" '
                        f'WHERE "{column}" = ANY(%s) ON CONFLICT DO NOTHING',
                        [keep, duplicates],
                    )
                    cursor.execute(f'DELETE FROM "{table}" WHERE "{column}" = ANY(%s)', [duplicates])
                for model, field in keys:
                    model.objects.filter(**{f"{field}__in": duplicates}).update(**{field: keep})
                for old in duplicates:
                    cursor.execute(
                        f"UPDATE {Chunk._meta.db_table} SET acl_tokens = ARRAY(SELECT DISTINCT t FROM "
                        "unnest(array_replace(acl_tokens, %s, %s)) AS t ORDER BY t) "
                        "WHERE acl_tokens @> ARRAY[%s]::varchar[]",
                        [f"{PREFIX[kind]}{old}", f"{PREFIX[kind]}{keep}", f"{PREFIX[kind]}{old}"],
                    )
                Principal.objects.filter(pk__in=duplicates).delete()
            if rows[0][1] != name:
                Principal.objects.filter(pk=keep).update(external_id=name)


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0023_eval_corpora"),
    ]

    operations = [migrations.RunPython(merge_spellings, migrations.RunPython.noop)]
