"""Ingest jobs: API documents written in the background, one row per document, so a job survives restarts."""

from __future__ import annotations

from django.db import models

from knowledge.models.api_keys import ApiKey
from knowledge.models.connectors import Connector
from knowledge.models.tenancy import Tenant


class IngestJob(models.Model):
    """A batch (or one big document) from `POST /api/v1/index[/batch]`, written by `bulk` workers."""

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        PARTIAL = "partial", "Finished with errors"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    FINISHED = (State.SUCCEEDED, State.PARTIAL, State.FAILED, State.CANCELLED)

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="ingest_jobs")
    connector = models.ForeignKey(Connector, on_delete=models.CASCADE, related_name="ingest_jobs")
    api_key = models.ForeignKey(
        ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="ingest_jobs"
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    idempotency_key = models.CharField(max_length=255, blank=True, default="")
    request_hash = models.CharField(max_length=64, help_text="SHA-256 of the request (idempotent retries).")
    total_documents = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="ingest_job_unique_idempotency_key",
            ),
            models.CheckConstraint(
                condition=models.Q(
                    state__in=["queued", "running", "succeeded", "partial", "failed", "cancelled"]
                ),
                name="ingest_job_state_valid",
            ),
        ]
        indexes = [models.Index(fields=["state", "heartbeat_at"], name="ingest_job_state_beat")]

    def __str__(self) -> str:
        return f"job {self.pk} ({self.state})"

    @property
    def finished(self) -> bool:
        return self.state in self.FINISHED


class IngestJobItem(models.Model):
    """One document of a job: its request body until written, then its outcome."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        DONE = "done", "Written"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    job = models.ForeignKey(IngestJob, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    external_id = models.CharField(max_length=512)
    chars = models.PositiveIntegerField()
    payload = models.JSONField(null=True, blank=True, help_text="The validated body; cleared once written.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    chunks = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["job", "position"]
        constraints = [
            models.UniqueConstraint(fields=["job", "position"], name="ingest_item_unique_position"),
            models.UniqueConstraint(fields=["job", "external_id"], name="ingest_item_unique_document"),
            models.CheckConstraint(
                condition=models.Q(state__in=["pending", "done", "failed", "cancelled"]),
                name="ingest_item_state_valid",
            ),
        ]
        indexes = [models.Index(fields=["job", "state", "position"], name="ingest_item_pending")]

    def __str__(self) -> str:
        return f"{self.job_id}#{self.position} {self.external_id}"
