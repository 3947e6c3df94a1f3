"""Expands a caller's identity into the ACL tokens that search filters on."""

from __future__ import annotations

from knowledge.models import Principal, Tenant
from retrieval_backends.types import PUBLIC_TOKEN, principal_token


def principal_tokens(*, tenant: Tenant, user_external_id: str | None) -> frozenset[str]:
    """`public`, plus the user's own token and one per group it belongs to (directly).

    An unknown user (or none) gets only `public`.
    """
    tokens = {PUBLIC_TOKEN}
    if not user_external_id:
        return frozenset(tokens)
    # One statement: the user and its groups (a LEFT JOIN: a user in no group is one row with NULLs).
    # Only groups of the same tenant count, whatever the membership table holds.
    rows = Principal.objects.filter(
        tenant=tenant, kind=Principal.Kind.USER, external_id=user_external_id
    ).values_list("pk", "groups__pk", "groups__kind", "groups__tenant_id")
    for user_pk, group_pk, group_kind, group_tenant in rows:
        tokens.add(principal_token(is_user=True, principal_id=user_pk))
        if group_pk is not None and group_kind == Principal.Kind.GROUP and group_tenant == tenant.pk:
            tokens.add(principal_token(is_user=False, principal_id=group_pk))
    return frozenset(tokens)
