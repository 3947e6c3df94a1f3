"""ACL values: the tokens a document's chunks carry, principals resolved by name within a tenant, and
the ACL a connector gives documents whose source names none."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from django.db.models import Q

from knowledge import names
from knowledge.connectors.types import SourceAcl
from knowledge.models import Connector, Document, Principal, Tenant
from retrieval_backends.types import PUBLIC_TOKEN, principal_token

MAX_ACL_NAMES = 1000
PrincipalKey = tuple[str, str]  # (kind, external id)


def tokens_for(*, is_public: bool, principal_ids: Iterable[int], kinds: Mapping[int, str]) -> list[str]:
    """`public` plus the token of each principal, sorted."""
    tokens = {
        principal_token(is_user=kinds[pk] == Principal.Kind.USER, principal_id=pk) for pk in principal_ids
    }
    if is_public:
        tokens.add(PUBLIC_TOKEN)
    return sorted(tokens)


def acl_tokens(*, is_public: bool, principals: Iterable[Principal]) -> list[str]:
    """The ACL tokens chunks carry for this ACL."""
    listed = list(principals)
    return tokens_for(
        is_public=is_public, principal_ids=[p.pk for p in listed], kinds={p.pk: p.kind for p in listed}
    )


def document_acl_tokens(*, document: Document) -> list[str]:
    """The ACL tokens a stored document's chunks carry (its effective ACL)."""
    return acl_tokens(is_public=document.is_public, principals=document.allowed_principals.all())


def acl_keys(acl: SourceAcl) -> list[PrincipalKey]:
    return [("user", u) for u in acl.users] + [("group", g) for g in acl.groups]


def principals_resolve(*, tenant: Tenant | int, keys: Iterable[PrincipalKey]) -> dict[PrincipalKey, int]:
    """Ids of the tenant's principals of these (kind, name) keys, matched by canonical name
    (knowledge.names); missing ones are created in bulk, so access applies as soon as they appear."""
    tenant_id = tenant if isinstance(tenant, int) else tenant.pk
    given = {key: (key[0], names.principal_name(*key)) for key in set(keys)}
    wanted = sorted({canonical for canonical in given.values() if canonical[1]})
    if not wanted:
        return {}
    found = _lookup(tenant_id, wanted)
    missing = [k for k in wanted if k not in found]
    if missing:
        Principal.objects.bulk_create(
            [Principal(tenant_id=tenant_id, kind=kind, external_id=name) for kind, name in missing],
            ignore_conflicts=True,
        )
        found.update(_lookup(tenant_id, missing))
    # Keyed by the names as given, so a caller holding another spelling finds its principal.
    return {key: found[canonical] for key, canonical in given.items() if canonical in found}


def _lookup(tenant_id: int, keys: Sequence[PrincipalKey]) -> dict[PrincipalKey, int]:
    match = Q()
    for kind in {k for k, _ in keys}:
        match |= Q(kind=kind, external_id__in=[name for k, name in keys if k == kind])
    rows = Principal.objects.filter(match, tenant_id=tenant_id).values_list("kind", "external_id", "pk")
    return {(kind, name): pk for kind, name, pk in rows}


def principals_acl(*, is_public: bool, principals: Iterable[Principal]) -> SourceAcl:
    """An ACL naming these principals."""
    listed = list(principals)
    return SourceAcl.of(
        public=is_public,
        users=[p.external_id for p in listed if p.kind == Principal.Kind.USER],
        groups=[p.external_id for p in listed if p.kind == Principal.Kind.GROUP],
    )


def connector_default_acl(*, connector: Connector) -> SourceAcl:
    """The ACL a pulled document gets when its source names none."""
    return principals_acl(
        is_public=connector.default_is_public, principals=connector.default_principals.all()
    )
