"""Deletions: documents, every document of a connector, a connector, a tenant, a principal.

Nothing is deleted by a silent ORM cascade: documents go through `document_hard_delete` (which
removes their chunks and vectors through the retrieval backend), in batches of short transactions,
so a large purge neither holds one huge transaction nor loses its place when interrupted.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction
from django.db.models import Q

from knowledge.models import Connector, Document, Principal, Tenant
from knowledge.services.access import documents_access_sync
from knowledge.services.documents import document_hard_delete

Progress = Callable[[int], None]


def documents_delete(*, document_ids: list[int], on_progress: Progress | None = None) -> int:
    """Hard-delete documents one short transaction each; returns how many existed."""
    deleted = 0
    for pk in sorted(document_ids):
        deleted += document_hard_delete(document_id=pk)
        if on_progress:
            on_progress(1)
    return deleted


def connector_purge(*, connector: Connector, on_progress: Progress | None = None) -> int:
    """Delete every document of the connector (resumable: re-running continues); returns the count."""
    ids = list(Document.objects.filter(connector=connector).values_list("pk", flat=True))
    return documents_delete(document_ids=ids, on_progress=on_progress)


def connector_delete(*, connector: Connector, on_progress: Progress | None = None) -> int:
    """Purge the connector's documents, then delete the connector; returns the documents deleted."""
    count = connector_purge(connector=connector, on_progress=on_progress)
    with transaction.atomic():
        locked = Connector.objects.select_for_update().filter(pk=connector.pk).first()
        if locked is not None:
            count += connector_purge(connector=locked)  # written meanwhile
            locked.delete()
    return count


def tenant_delete(*, tenant: Tenant, on_progress: Progress | None = None) -> int:
    """Delete every connector (with its documents) of the tenant, then the tenant itself."""
    count = 0
    for connector in Connector.objects.filter(tenant=tenant).order_by("pk"):
        count += connector_delete(connector=connector, on_progress=on_progress)
    Tenant.objects.filter(pk=tenant.pk).delete()
    return count


def principal_delete(*, principal: Principal) -> int:
    """Delete a principal; the documents that granted it lose its token at once. Returns how many."""
    granted = Q(allowed_principals=principal) | Q(source_principals=principal)
    with transaction.atomic():
        ids = sorted(set(Document.objects.filter(granted).values_list("pk", flat=True)))
        list(Document.objects.select_for_update().filter(pk__in=ids).order_by("pk").values_list("pk"))
        Principal.objects.filter(pk=principal.pk).delete()
        documents_access_sync(document_ids=ids)
    return len(ids)
