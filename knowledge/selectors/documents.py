"""Document reads for the API and ingestion."""

from __future__ import annotations

from django.db.models import QuerySet

from knowledge.models import Document, Tenant
from knowledge.store.lookups import supported_languages


def is_text_search_language(name: str) -> bool:
    """Whether documents may use this language (a text-search configuration of the store)."""
    return name in supported_languages()


def document_list(
    *, tenant: Tenant, connector_id: int | None = None, environment_id: int | None = None
) -> QuerySet[Document]:
    documents = Document.objects.filter(tenant=tenant)
    if connector_id is not None:
        documents = documents.filter(connector_id=connector_id)
    if environment_id is not None:
        documents = documents.filter(environment_id=environment_id)
    return (
        documents.select_related("tenant", "environment")
        .prefetch_related("allowed_principals")
        .order_by("connector_id", "external_id")
    )


def document_get(*, tenant: Tenant, external_id: str, connector_id: int) -> Document | None:
    return document_list(tenant=tenant, connector_id=connector_id).filter(external_id=external_id).first()
