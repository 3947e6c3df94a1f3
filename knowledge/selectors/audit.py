"""Audit log reads: who saw a document, and entries for export."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from knowledge.models import AccessAudit, SearchAudit


def document_viewers(*, document_id: int, limit: int = 20) -> QuerySet[SearchAudit]:
    """The latest searches that returned the document (newest first)."""
    return SearchAudit.objects.filter(document_ids__contains=[document_id]).select_related("api_key")[:limit]


def audit_entries(
    *, since: datetime, until: datetime | None = None, tenant: str | None = None
) -> Iterator[dict[str, Any]]:
    """Every search and access change in [since, until), oldest first, as plain dicts."""
    searches = SearchAudit.objects.filter(created_at__gte=since).select_related("tenant", "api_key")
    changes = AccessAudit.objects.filter(created_at__gte=since).select_related("tenant")
    if until is not None:
        searches, changes = searches.filter(created_at__lt=until), changes.filter(created_at__lt=until)
    if tenant is not None:
        searches, changes = searches.filter(tenant__slug=tenant), changes.filter(tenant__slug=tenant)
    for entry in searches.order_by("created_at", "pk").iterator(chunk_size=2000):
        yield {
            "type": "search",
            "at": entry.created_at.isoformat(),
            "tenant": entry.tenant.slug,
            "api_key": entry.api_key.lookup_id if entry.api_key else None,
            "staff_user": entry.staff_user or None,
            "actor": entry.actor,
            "principal": entry.principal or None,
            "query_sha256": entry.query_hash,
            **({"query": entry.query_text} if entry.query_text else {}),
            "filters": entry.filters,
            "results": [{"document_id": d, "rank": r} for r, d in enumerate(entry.document_ids, start=1)],
        }
    for change in changes.order_by("created_at", "pk").iterator(chunk_size=2000):
        yield {
            "type": "access_change",
            "at": change.created_at.isoformat(),
            "tenant": change.tenant.slug,
            "user": change.user,
            "document_id": change.document_id,
            "document": change.document_label,
            "action": change.action,
            "change": change.change,
            "before": change.before,
            "after": change.after,
        }
