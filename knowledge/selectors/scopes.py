"""Turns an API key and a request's identity fields into the search scope that every lane applies."""

from __future__ import annotations

from collections.abc import Sequence

from knowledge.errors import InvalidInput, PermissionDenied
from knowledge.models import ApiKey, Connector, Environment, Tenant
from knowledge.selectors.identity import principal_tokens
from retrieval_backends.types import PUBLIC_TOKEN, SearchScope


def tenant_for_key(*, key: ApiKey, source_account_id: str | None) -> Tenant:
    """The key's tenant; naming another tenant in the body is refused (nothing crosses tenants)."""
    if source_account_id is not None and source_account_id != key.tenant.slug:
        raise PermissionDenied("this API key belongs to another source account", field="source_account_id")
    return key.tenant


def environment_by_slug(*, tenant: Tenant, slug: str | None) -> Environment | None:
    if slug is None:
        return None
    environment = Environment.objects.filter(tenant=tenant, slug=slug).first()
    if environment is None:
        known = ", ".join(Environment.objects.filter(tenant=tenant).values_list("slug", flat=True))
        raise InvalidInput(f"unknown environment {slug!r} (known: {known or 'none'})", field="environment")
    return environment


def connectors_by_id(
    *, tenant: Tenant, connector_ids: Sequence[int] | None, field: str = "connector_ids"
) -> tuple[int, ...] | None:
    """The tenant's connectors of those ids; an id of no (or another tenant's) connector is refused."""
    if connector_ids is None:
        return None
    wanted = set(connector_ids)
    found = set(Connector.objects.filter(tenant=tenant, pk__in=wanted).values_list("pk", flat=True))
    missing = sorted(wanted - found)
    if missing:
        raise InvalidInput(f"unknown connector ids: {missing}", field=field)
    return tuple(sorted(found))


def search_scope(
    *,
    tenant: Tenant,
    user_external_id: str | None = None,
    bypass_acl: bool = False,
    environment: str | None = None,
    connector_ids: Sequence[int] | None = None,
) -> SearchScope:
    """What `user_external_id` (None: public only) may search in the tenant; the API and the playground."""
    env = environment_by_slug(tenant=tenant, slug=environment)
    return SearchScope(
        tenant_id=tenant.pk,
        principal_tokens=principal_tokens(tenant=tenant, user_external_id=user_external_id),
        bypass_acl=bypass_acl,
        environment_id=env.pk if env else None,
        connector_ids=connectors_by_id(tenant=tenant, connector_ids=connector_ids),
    )


def search_scope_for_key(
    *,
    key: ApiKey,
    source_account_id: str | None = None,
    environment: str | None = None,
    connector_ids: Sequence[int] | None = None,
    on_behalf_of: str | None = None,
    bypass_acl: bool = False,
) -> SearchScope:
    """The key's fixed principal, or the `on_behalf_of` user for keys allowed to name one."""
    tenant = tenant_for_key(key=key, source_account_id=source_account_id)
    if on_behalf_of is not None and not key.on_behalf_of:
        raise PermissionDenied("this API key may not search on behalf of other users", field="on_behalf_of")
    if bypass_acl and not key.bypass_acl:
        raise PermissionDenied("this API key may not bypass ACLs", field="bypass_acl")
    user = (
        on_behalf_of if on_behalf_of is not None else (key.principal.external_id if key.principal else None)
    )
    return search_scope(
        tenant=tenant,
        user_external_id=user,
        bypass_acl=bypass_acl,
        environment=environment,
        connector_ids=connector_ids,
    )


def identity_warnings(*, scope: SearchScope, on_behalf_of: str | None) -> list[str]:
    """A caller naming a user the tenant does not know (a typo, a user not synced yet) is told that only
    public documents were searched: a known user always carries its own token."""
    if on_behalf_of is None or scope.bypass_acl or scope.principal_tokens != frozenset({PUBLIC_TOKEN}):
        return []
    return [
        f"on_behalf_of: no user {on_behalf_of!r} in this source account; only public documents were searched"
    ]
