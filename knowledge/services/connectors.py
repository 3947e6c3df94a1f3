"""Connector writes: creating one, its configuration, and its default ACL with the documents that use it.

Every writer of connectors (the admin, the API's push connector, `ingest`, the demo, the eval
corpora) comes here, so a connector's configuration is validated the same way everywhere and a
new default ACL always reaches the documents that use it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from knowledge.access.principals import connector_default_acl
from knowledge.errors import InvalidInput
from knowledge.models import Connector, Document, Principal, Tenant
from knowledge.services.source_acls import documents_source_acl_set


def connector_ensure(
    *,
    tenant: Tenant,
    name: str,
    kind: str,
    config: dict[str, Any] | None = None,
    default_is_public: bool = False,
) -> tuple[Connector, bool]:
    """The tenant's connector of this name, created (validated) with these settings when missing; an
    existing one is returned as it is. Safe against a concurrent create of the same name.

    :raises InvalidInput: when a new connector's settings are invalid (an unknown kind, a bad config).
    """
    found = Connector.objects.filter(tenant=tenant, name=name).first()
    if found is not None:
        return found, False
    connector = Connector(
        tenant=tenant, name=name, kind=kind, config=config or {}, default_is_public=default_is_public
    )
    _validate(connector)
    try:
        with transaction.atomic():
            connector.save()
    except IntegrityError:  # created concurrently
        return Connector.objects.get(tenant=tenant, name=name), False
    return connector, True


def connector_update(*, connector: Connector, **values: Any) -> Connector:
    """Set these fields (`config`, `enabled`, `default_is_public`, ...) on the connector, validated and
    under its row lock. A changed `default_is_public` reaches the documents that use the default."""
    with transaction.atomic():
        locked = Connector.objects.select_for_update().get(pk=connector.pk)
        default_changed = (
            "default_is_public" in values and values["default_is_public"] != locked.default_is_public
        )
        for name, value in values.items():
            setattr(locked, name, value)
        _validate(locked)
        locked.save(update_fields=list(values))
    if default_changed:
        connector_apply_default_acl(connector=locked)
    return locked


def connector_config_merge(*, connector: Connector, **values: Any) -> Connector:
    """Merge these keys into the connector's config (read and written under its row lock)."""
    with transaction.atomic():
        locked = Connector.objects.select_for_update().get(pk=connector.pk)
        return connector_update(connector=locked, config={**locked.config, **values})


def connector_set_default_acl(
    *, connector: Connector, is_public: bool, principals: Iterable[Principal]
) -> int:
    """The connector's default ACL (for documents whose source names none) becomes this one, and
    reaches those documents; returns how many documents' effective ACL was set."""
    listed = list(principals)
    foreign = [str(p) for p in listed if p.tenant_id != connector.tenant_id]
    if foreign:
        raise InvalidInput(
            f"these belong to another tenant: {', '.join(foreign)}", field="default_principals"
        )
    with transaction.atomic():
        locked = Connector.objects.select_for_update().get(pk=connector.pk)
        locked.default_is_public = is_public
        locked.save(update_fields=["default_is_public"])
        locked.default_principals.set(listed)
    return connector_apply_default_acl(connector=locked)


def connector_apply_default_acl(*, connector: Connector, batch_size: int = 500) -> int:
    """Give the connector's documents that use its default ACL the current default (admin overrides
    are kept; a document whose ACL a sync took from its source meanwhile is left alone, re-checked
    under its row lock); returns how many documents' effective ACL was set."""
    acl = connector_default_acl(connector=connector)
    documents = Document.objects.filter(connector=connector, acl_origin=Document.AclOrigin.CONNECTOR)
    pks = list(documents.values_list("pk", flat=True).order_by("pk"))
    changed = 0
    for start in range(0, len(pks), batch_size):
        changed += documents_source_acl_set(
            tenant_id=connector.tenant_id,
            document_ids=pks[start : start + batch_size],
            acl=acl,
            origin=Document.AclOrigin.CONNECTOR,
            only_origin=Document.AclOrigin.CONNECTOR,
        )
    return changed


def _validate(connector: Connector) -> None:
    try:
        connector.full_clean(validate_unique=False, validate_constraints=False)
    except ValidationError as error:
        field, messages = next(iter(error.message_dict.items()))
        raise InvalidInput(f"{field}: {' '.join(messages)}", field=field) from error
