"""Document reads for the API and ingestion."""

from __future__ import annotations

from collections.abc import Set

from django.db.models import Exists, OuterRef, Q, QuerySet

from knowledge.models import Document, Tenant
from knowledge.store.lookups import supported_languages


def is_text_search_language(name: str) -> bool:
    """Whether documents may use this language (a text-search configuration of the store)."""
    return name in supported_languages()


def document_list(
    *,
    tenant: Tenant,
    connector_id: int | None = None,
    environment_id: int | None = None,
    visible_to: Set[int] | None = None,
) -> QuerySet[Document]:
    """The tenant's documents; with `visible_to` (a user's principal ids: itself and its groups) only
    those the user may see: not soft-deleted, and public or naming one of them (the search's rule)."""
    documents = Document.objects.filter(tenant=tenant)
    if connector_id is not None:
        documents = documents.filter(connector_id=connector_id)
    if environment_id is not None:
        documents = documents.filter(environment_id=environment_id)
    if visible_to is not None:
        grants = Document.allowed_principals.through.objects.filter(
            document_id=OuterRef("pk"), principal_id__in=sorted(visible_to)
        )
        documents = documents.filter(Q(is_public=True) | Exists(grants), deleted_at__isnull=True)
    return (
        documents.select_related("tenant", "environment")
        .prefetch_related("allowed_principals")
        .order_by("connector_id", "external_id")
    )


def document_get(
    *, tenant: Tenant, external_id: str, connector_id: int, visible_to: Set[int] | None = None
) -> Document | None:
    found = document_list(tenant=tenant, connector_id=connector_id, visible_to=visible_to)
    return found.filter(external_id=external_id).first()
