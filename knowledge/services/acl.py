"""ACL values: tokens chunks carry, principals resolved by name within a tenant, connector defaults."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db.models import Q

from knowledge.connectors.types import SourceAcl
from knowledge.models import Connector, Document, Principal, Tenant
from retrieval_backends.types import PUBLIC_TOKEN

MAX_ACL_NAMES = 1000
PrincipalKey = tuple[str, str]  # (kind, external id)


def tokens_for(*, is_public: bool, principal_ids: Iterable[int], kinds: Mapping[int, str]) -> list[str]:
    """`public` plus `u:<id>` / `g:<id>` of each principal, sorted."""
    tokens = {f"{'u' if kinds[pk] == Principal.Kind.USER else 'g'}:{pk}" for pk in principal_ids}
    if is_public:
        tokens.add(PUBLIC_TOKEN)
    return sorted(tokens)


def grants_of(through: Any, document_ids: Iterable[int]) -> dict[int, set[int]]:
    """Each document's principal ids in a grants table (`allowed_principals` or `source_principals`)."""
    found: dict[int, set[int]] = defaultdict(set)
    for document_id, principal_id in through.objects.filter(document_id__in=list(document_ids)).values_list(
        "document_id", "principal_id"
    ):
        found[document_id].add(principal_id)
    return found


def grants_replace(through: Any, grants: Mapping[int, Iterable[int]]) -> None:
    """Each document's rows in a grants table (`allowed_principals` or `source_principals`) become
    exactly the given principal ids; documents not named are untouched."""
    if not grants:
        return
    through.objects.filter(document_id__in=list(grants)).delete()
    through.objects.bulk_create(
        [through(document_id=d, principal_id=p) for d, ids in grants.items() for p in sorted(ids)]
    )


def principal_kinds(principal_ids: Iterable[int]) -> dict[int, str]:
    """The kind of each principal (what `tokens_for` needs)."""
    return dict(Principal.objects.filter(pk__in=set(principal_ids)).values_list("pk", "kind"))


def document_grants(document_ids: Iterable[int]) -> tuple[dict[int, set[int]], dict[int, str]]:
    """Each document's granted principal ids, and the kind of every such principal (for `tokens_for`)."""
    grants = grants_of(Document.allowed_principals.through, document_ids)
    return grants, principal_kinds(p for found in grants.values() for p in found)


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
    """Ids of the tenant's principals of these (kind, name) keys; missing ones are created in bulk,
    so access applies as soon as they appear."""
    tenant_id = tenant if isinstance(tenant, int) else tenant.pk
    wanted = sorted(set(keys))
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
    return found


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
