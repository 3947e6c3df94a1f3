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
        wanted = term.removeprefix(DOCUMENT_SEARCH)
        if term.startswith(DOCUMENT_SEARCH) and wanted.isascii() and wanted.isdigit():
            return queryset.filter(document_ids__contains=[int(wanted)]), False
        return super().get_search_results(request, queryset, search_term)


@admin.register(AccessAudit)
class AccessAuditAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "tenant", "user", "action", "change", "document_label"]
    list_filter = ["tenant", "change", "action", "created_at"]
    date_hierarchy = "created_at"
    search_fields = ["user", "document_label"]


def document_viewers_context(*, request: HttpRequest, object_id: str) -> dict[str, Any]:
    """The latest searches that returned the document, for staff who may view the search log."""
    if not (object_id.isascii() and object_id.isdigit()):
        return {}
    if not request.user.has_perm("knowledge.view_searchaudit"):  # type: ignore[union-attr]
        return {}
    searches = list(document_viewers(document_id=int(object_id)))
    link = reverse("admin:knowledge_searchaudit_changelist") + f"?q={DOCUMENT_SEARCH}{object_id}"
    return {"viewers": {"searches": searches, "all_link": link}}
