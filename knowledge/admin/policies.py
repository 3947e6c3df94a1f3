"""Document policies: an admin's decisions kept by source id, listed and cleared (never edited here)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from knowledge.models import Document, DocumentPolicy
from knowledge.services.documents import document_policy_clear


def policy_text(policy: DocumentPolicy) -> str:
    """What the policy decides, in words (also shown on the document's page)."""
    parts = []
    if policy.overrides_acl:
        names = sorted(str(p) for p in policy.principals.all())
        who = ", ".join((["everyone in the tenant"] if policy.is_public else []) + names) or "nobody"
        by = policy.acl_override_by or "admin"
        parts.append(f"ACL override by {by} ({policy.acl_override_at:%Y-%m-%d %H:%M}): {who}")
    if policy.deletes:
        parts.append(f"soft-deleted by {policy.deleted_by or 'admin'} ({policy.deleted_at:%Y-%m-%d %H:%M})")
    return "; ".join(parts) or "nothing"


@admin.register(DocumentPolicy)
class DocumentPolicyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["external_id", "connector", "decision", "document", "updated_at"]
    list_filter = ["connector__tenant", "connector"]
    search_fields = ["external_id"]
    actions = ["clear_acl_override", "clear_deletion"]
    readonly_fields = ("connector", "external_id", "decision", "document", "updated_at")
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # made by an admin's edit of a document, nowhere else

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # cleared by the actions, so the document (if any) follows

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        return {k: v for k, v in super().get_actions(request).items() if k != "delete_selected"}

    @admin.display(description="decision")
    def decision(self, obj: DocumentPolicy) -> str:
        return policy_text(obj)

    @admin.display(description="document now")
    def document(self, obj: DocumentPolicy) -> str:
        found = Document.objects.filter(connector_id=obj.connector_id, external_id=obj.external_id).first()
        if found is None:
            return "none (the source does not have it now; the decision applies when it returns)"
        return format_html(
            '<a href="{}">{}</a>', reverse("admin:knowledge_document_change", args=[found.pk]), str(found)
        )

    @admin.action(description="Clear the ACL override (the source's ACL applies)", permissions=["change"])
    def clear_acl_override(self, request: HttpRequest, queryset: QuerySet[DocumentPolicy]) -> None:
        for policy in queryset.order_by("pk"):
            document_policy_clear(policy=policy, acl=True)
        self.message_user(request, f"{queryset.count()} ACL override(s) cleared.", messages.SUCCESS)

    @admin.action(description="Clear the soft delete (restore)", permissions=["change"])
    def clear_deletion(self, request: HttpRequest, queryset: QuerySet[DocumentPolicy]) -> None:
        for policy in queryset.order_by("pk"):
            document_policy_clear(policy=policy, deletion=True)
        self.message_user(request, f"{queryset.count()} soft delete(s) cleared.", messages.SUCCESS)
