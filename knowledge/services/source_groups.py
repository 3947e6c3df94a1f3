"""A source's groups written as principals of kind group: each group's members become exactly the
users the source lists (by normalised e-mail), with the group rows locked first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from knowledge.access.principals import principals_resolve
from knowledge.connectors.types import SourceGroup
from knowledge.models import Principal

MEMBERSHIP = Principal.groups.through  # from_principal: the member, to_principal: the group


@dataclass(frozen=True)
class GroupChanges:
    added: int = 0
    removed: int = 0


def source_groups_apply(*, tenant_id: int, groups: Sequence[SourceGroup]) -> GroupChanges:
    """Set the members of the complete groups (incomplete ones are left alone: whatever names them is
    made private instead). Users and groups that do not exist yet are created. Takes effect on every
    search at once: a caller's groups are read from PostgreSQL for each search, on every backend."""
    complete = [g for g in groups if g.complete]
    if not complete:
        return GroupChanges()
    group_ids = principals_resolve(tenant=tenant_id, keys=[("group", g.name) for g in complete])
    user_ids = principals_resolve(tenant=tenant_id, keys=[("user", m) for g in complete for m in g.members])
    wanted = {
        (group_ids[("group", g.name)], user_ids[("user", m)])
        for g in complete
        for m in g.members
        if ("user", m) in user_ids and ("group", g.name) in group_ids
    }
    ids = sorted(set(group_ids.values()))
    with transaction.atomic():
        list(Principal.objects.select_for_update().filter(pk__in=ids).order_by("pk").values_list("pk"))
        rows = MEMBERSHIP.objects.filter(to_principal_id__in=ids)
        current = set(rows.values_list("to_principal_id", "from_principal_id"))
        gone = current - wanted
        for group_id, user_id in gone:
            MEMBERSHIP.objects.filter(to_principal_id=group_id, from_principal_id=user_id).delete()
        MEMBERSHIP.objects.bulk_create(
            [MEMBERSHIP(to_principal_id=g, from_principal_id=u) for g, u in sorted(wanted - current)],
            ignore_conflicts=True,
        )
    return GroupChanges(added=len(wanted - current), removed=len(gone))
