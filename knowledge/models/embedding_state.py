"""Which embedder serves queries and new documents, and the blue/green re-embedding jobs that change it."""

from __future__ import annotations

from django.db import models


class ActiveEmbedder(models.Model):
    """The deployment's active embedder (one row); absent until the first `reindex` switch.

    Until a reindex switches it, the KNOWLEDGE_EMBEDDER setting decides.
    """

    SINGLETON_ID = 1

    id = models.PositiveSmallIntegerField(primary_key=True, default=SINGLETON_ID, editable=False)
    spec = models.CharField(max_length=300, help_text="Short name or dotted path of the embedder.")
    model = models.CharField(max_length=200)
    dimension = models.PositiveIntegerField()
    switched_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.CheckConstraint(condition=models.Q(id=1), name="active_embedder_singleton")]

    def __str__(self) -> str:
        return f"{self.spec} ({self.model}, {self.dimension}-d)"


class ReindexJob(models.Model):
    """A backfill of every chunk with a new embedder's vectors while the old ones keep serving."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        SWITCHED = "switched", "Switched"
        FAILED = "failed", "Failed"

    spec = models.CharField(max_length=300)
    model = models.CharField(max_length=200)
    dimension = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    embedded = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"reindex → {self.model} ({self.status})"
