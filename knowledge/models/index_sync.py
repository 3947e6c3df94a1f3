"""What an external index still has to mirror: document versions, deletion tombstones, sync runs.

Triggers (migration 0013) bump `Document.index_version` in the same transaction as every change an
index mirrors (ACL grants, environment, deletion state, text, chunks) and leave a tombstone when a
document row is deleted, whatever deleted it. A push marks a document clean with a compare-and-set
on the version it read, so a change made while the push ran keeps the document dirty.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

from knowledge.models.connectors import Connector


class IndexTombstone(models.Model):
    """A deleted document the index may still hold; removed once the index confirms the deletion."""

    document_id = models.BigIntegerField(unique=True)
    tenant_id = models.BigIntegerField()
    connector_id = models.BigIntegerField()
    # The document's last index_version + 1: an index applies the deletion over any older push.
    version = models.BigIntegerField(default=0, db_default=0)
    created_at = models.DateTimeField(db_default=Now())
    attempts = models.PositiveIntegerField(default=0, db_default=0)
    last_error = models.TextField(blank=True, default="", db_default="")
    retry_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "document_id"]
        indexes = [models.Index(fields=["created_at"], name="tombstone_created")]

    def __str__(self) -> str:
        return f"tombstone of document {self.document_id}"


class SyncRun(models.Model):
    """One run of a connector: a sync, a full resync or a purge, with its counts."""

    class Kind(models.TextChoices):
        SYNC = "sync", "Sync"
        FULL = "full", "Full resync"
        PURGE = "purge", "Purge"
        ACL = "acl", "Permission sync"

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        OK = "ok", "OK"
        FAILED = "failed", "Failed"

    connector = models.ForeignKey(Connector, on_delete=models.CASCADE, related_name="runs")
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.SYNC)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    added = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    deleted = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    error_text = models.TextField(blank=True)
    processed = models.PositiveIntegerField(default=0, help_text="Progress of a long run (documents).")
    total = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.connector} {self.kind} {self.status}"
