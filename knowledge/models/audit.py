"""The audit log: which documents each search returned to whom, and admin changes of access."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models

from knowledge.models.api_keys import ApiKey
from knowledge.models.documents import Document
from knowledge.models.tenancy import Tenant


class SearchAudit(models.Model):
    """One search: who asked (a key, a user on whose behalf, a bypass, or a staff user in the
    playground), a hash of the question (its text only where allowed), the filters, and the
    documents returned in rank order."""

    class Actor(models.TextChoices):
        KEY = "key", "API key identity"
        ON_BEHALF_OF = "on_behalf_of", "On behalf of a user"
        BYPASS = "bypass", "ACLs bypassed"
        STAFF = "staff", "Staff user (playground)"

    created_at = models.DateTimeField(db_index=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    staff_user = models.CharField(max_length=150, blank=True)
    actor = models.CharField(max_length=16, choices=Actor.choices)
    principal = models.CharField(
        max_length=320, blank=True, help_text="The user searched as (empty: public documents only)."
    )
    query_hash = models.CharField(max_length=64, help_text="SHA-256 of the question's text.")
    query_text = models.TextField(blank=True, help_text="Kept only when KNOWLEDGE_AUDIT_QUERY_TEXT is on.")
    filters = models.JSONField(default=dict, blank=True)
    document_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            GinIndex(fields=["document_ids"], name="searchaudit_documents_gin"),
            models.Index(fields=["tenant", "created_at"], name="searchaudit_tenant_time"),
        ]

    def __str__(self) -> str:
        who = self.staff_user or self.principal or "public"
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor} {who}: {len(self.document_ids)} document(s)"


class AccessAudit(models.Model):
    """An admin's change of who may see a document, with the access before and after."""

    class Change(models.TextChoices):
        WIDENED = "widened", "Widened"
        NARROWED = "narrowed", "Narrowed"
        BOTH = "both", "Widened and narrowed"
        NONE = "none", "Unchanged"

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    document_label = models.CharField(max_length=600, help_text="The document, kept after it is deleted.")
    user = models.CharField(max_length=150)
    action = models.CharField(max_length=64)
    change = models.CharField(max_length=8, choices=Change.choices)
    before = models.JSONField()
    after = models.JSONField()

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return (
            f"{self.created_at:%Y-%m-%d %H:%M} {self.user} {self.action} {self.document_label}: {self.change}"
        )
