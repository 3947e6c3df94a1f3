"""The audit log in the admin (read-only, filterable by user, document and time), and the
"Who saw this document?" panel of the document page."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse

from knowledge.admin.base import ReadOnlyAdmin
from knowledge.models import AccessAudit, SearchAudit
from knowledge.selectors.audit import document_viewers

DOCUMENT_SEARCH = "doc:"
MAX_ID = 2**63 - 1  # bigint: a larger number names no document


def _document_id(text: str) -> int | None:
    """The document id a text names, or None (not a number, or beyond any id)."""
    return int(text) if text.isascii() and text.isdigit() and int(text) <= MAX_ID else None


@admin.register(SearchAudit)
class SearchAuditAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "tenant", "actor", "principal", "staff_user", "api_key", "result_count"]
    list_filter = ["tenant", "actor", "created_at"]
    date_hierarchy = "created_at"
    search_fields = ["principal", "staff_user", "query_hash"]
    search_help_text = (
        f"A user, a staff user or a query hash; {DOCUMENT_SEARCH}<id>: the searches that returned a document."
    )

    @admin.display(description="Documents")
    def result_count(self, obj: SearchAudit) -> int:
        return len(obj.document_ids)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[SearchAudit], search_term: str
    ) -> tuple[QuerySet[SearchAudit], bool]:
        term = search_term.strip()
        if term.startswith(DOCUMENT_SEARCH):
            wanted = _document_id(term.removeprefix(DOCUMENT_SEARCH))
            return (
                queryset.none() if wanted is None else queryset.filter(document_ids__contains=[wanted])
            ), False
        return super().get_search_results(request, queryset, search_term)


@admin.register(AccessAudit)
class AccessAuditAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "tenant", "user", "action", "change", "document_label"]
    list_filter = ["tenant", "change", "action", "created_at"]
    date_hierarchy = "created_at"
    search_fields = ["user", "document_label"]


def document_viewers_context(*, request: HttpRequest, object_id: str) -> dict[str, Any]:
    """The latest searches that returned the document, for staff who may view the search log."""
    document_id = _document_id(object_id)
    if document_id is None or not request.user.has_perm("knowledge.view_searchaudit"):  # type: ignore[union-attr]
        return {}
    searches = list(document_viewers(document_id=document_id))
    link = reverse("admin:knowledge_searchaudit_changelist") + f"?q={DOCUMENT_SEARCH}{object_id}"
    return {"viewers": {"searches": searches, "all_link": link}}
