"""Expands a caller's identity into the ACL tokens that search filters on."""

from __future__ import annotations

from knowledge.models import Principal, Tenant
from retrieval_backends.types import PUBLIC_TOKEN


def principal_tokens(*, tenant: Tenant, user_external_id: str | None) -> frozenset[str]:
    """`public`, plus the user's own token and one per group it belongs to (directly).

    An unknown user (or none) gets only `public`.
    """
    tokens = {PUBLIC_TOKEN}
    if not user_external_id:
        return frozenset(tokens)
    user = Principal.objects.filter(
        tenant=tenant, kind=Principal.Kind.USER, external_id=user_external_id
    ).first()
    if user is None:
        return frozenset(tokens)
    tokens.add(user.acl_token)
    # Only groups of the same tenant count, whatever the membership table holds.
    groups = user.groups.filter(tenant=tenant, kind=Principal.Kind.GROUP).values_list("pk", flat=True)
    tokens.update(f"g:{pk}" for pk in groups)
    return frozenset(tokens)
