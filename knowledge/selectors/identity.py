"""Expands a caller's identity into the ACL tokens that search filters on."""

from __future__ import annotations

from knowledge import names
from knowledge.models import Principal, Tenant
from retrieval_backends.types import PUBLIC_TOKEN, principal_token


def _identity_rows(tenant: Tenant, user_external_id: str) -> list[tuple[int, int | None]]:
    """The user's pk with each of its groups' pks (one statement; a LEFT JOIN, so a user in no group is
    one row with None). Only groups of the same tenant count, whatever the membership table holds."""
    rows = Principal.objects.filter(
        tenant=tenant, kind=Principal.Kind.USER, external_id=names.user_id(user_external_id)
    ).values_list("pk", "groups__pk", "groups__kind", "groups__tenant_id")
    return [
        (user_pk, group_pk if group_kind == Principal.Kind.GROUP and group_tenant == tenant.pk else None)
        for user_pk, group_pk, group_kind, group_tenant in rows
    ]


def principal_tokens(*, tenant: Tenant, user_external_id: str | None) -> frozenset[str]:
    """`public`, plus the user's own token and one per group it belongs to (directly).

    An unknown user (or none) gets only `public`.
    """
    tokens = {PUBLIC_TOKEN}
    if not user_external_id:
        return frozenset(tokens)
    for user_pk, group_pk in _identity_rows(tenant, user_external_id):
        tokens.add(principal_token(is_user=True, principal_id=user_pk))
        if group_pk is not None:
            tokens.add(principal_token(is_user=False, principal_id=group_pk))
    return frozenset(tokens)


def principal_ids(*, tenant: Tenant, user_external_id: str) -> frozenset[int]:
    """The principals a document may name for the user to see it: the user and its groups (none for an
    unknown user)."""
    ids: set[int] = set()
    for user_pk, group_pk in _identity_rows(tenant, user_external_id):
        ids.add(user_pk)
        if group_pk is not None:
            ids.add(group_pk)
    return frozenset(ids)
