"""A stored document's source ACL set in place: a connector default re-applied, an ACL file that became
unusable. Rows are locked first and every decision is made on the locked rows."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from knowledge.access.grants import grants_replace
from knowledge.access.principals import acl_keys, principals_resolve
from knowledge.access.rules import source_acl_applies
from knowledge.connectors.types import SourceAcl
from knowledge.models import Document
from knowledge.services.access import documents_access_sync


def documents_source_acl_set(
    *,
    tenant_id: int,
    document_ids: Sequence[int],
    acl: SourceAcl,
    origin: str,
    only_origin: str | None = None,
) -> int:
    """Give the documents this source ACL (and origin); it becomes their effective ACL unless an admin
    overrode it. With `only_origin`, documents whose origin is another one once locked (a sync just
    read their ACL file, say) are left alone. Returns how many documents' effective ACL was set."""
    principal_ids = set(principals_resolve(tenant=tenant_id, keys=acl_keys(acl)).values())
    with transaction.atomic():
        locked = list(Document.objects.select_for_update().filter(pk__in=document_ids).order_by("pk"))
        if only_origin is not None:
            locked = [d for d in locked if d.acl_origin == only_origin]
        pks = [d.pk for d in locked]
        Document.objects.filter(pk__in=pks).update(source_is_public=acl.public, acl_origin=origin)
        grants_replace(Document.source_principals.through, {pk: principal_ids for pk in pks})
        free = [d.pk for d in locked if source_acl_applies(d)]
        Document.objects.filter(pk__in=free).update(is_public=acl.public)
        grants_replace(Document.allowed_principals.through, {pk: principal_ids for pk in free})
        documents_access_sync(document_ids=free)
    return len(free)
