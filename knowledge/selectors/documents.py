"""Document reads for the API and ingestion."""

from __future__ import annotations

from django.db import connection
from django.db.models import QuerySet

from knowledge.models import Document, Tenant


def is_text_search_language(name: str) -> bool:
    """Whether PostgreSQL has a text-search configuration of that name."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_ts_config WHERE cfgname = %s", [name])
        return cursor.fetchone() is not None


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
