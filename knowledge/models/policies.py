"""Admin decisions about a source's document, kept by (connector, external id) so they outlive the row."""

from __future__ import annotations

from django.db import models

from knowledge.models.connectors import Connector
from knowledge.models.principals import Principal


class DocumentPolicy(models.Model):
    """What an admin decided about the document a connector's source calls `external_id`: an ACL
    override and/or a soft delete. A prune deletes the document row; this row stays, and the decision
    applies again when the source brings the document back. It goes when an admin clears it or the
    connector is deleted. The document row, while it exists, carries the same decision (written in the
    same transaction), since search reads the row."""

    connector = models.ForeignKey(Connector, on_delete=models.CASCADE, related_name="policies")
    external_id = models.CharField(max_length=512)
    acl_override_at = models.DateTimeField(null=True, blank=True)
    acl_override_by = models.CharField(max_length=150, blank=True)
    is_public = models.BooleanField(default=False)
    principals = models.ManyToManyField(Principal, blank=True, related_name="policies")
    deleted_at = models.DateTimeField(null=True, blank=True)
    deleted_by = models.CharField(max_length=150, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "document policy"
        verbose_name_plural = "document policies"
        ordering = ["connector__tenant__slug", "connector__name", "external_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["connector", "external_id"], name="document_policy_unique_source_id"
            )
        ]

    def __str__(self) -> str:
        return f"{self.connector}:{self.external_id}"

    @property
    def overrides_acl(self) -> bool:
        return self.acl_override_at is not None

    @property
    def deletes(self) -> bool:
        return self.deleted_at is not None

    @property
    def empty(self) -> bool:
        return not self.overrides_acl and not self.deletes
