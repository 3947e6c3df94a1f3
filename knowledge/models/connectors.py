"""Connectors: where documents come from (API push, a filesystem folder, web pages)."""

from __future__ import annotations

from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import models

from knowledge import credentials
from knowledge.connectors.registry import connector_kind, kind_names
from knowledge.json_values import json_problem
from knowledge.models.principals import Principal
from knowledge.models.tenancy import Environment, Tenant

MAX_SYNC_INTERVAL = timedelta(days=366)


class Connector(models.Model):
    """A source of documents for one tenant, synced by Celery workers."""

    class Kind(models.TextChoices):
        API = "api", "API push"
        FILESYSTEM = "filesystem", "Filesystem"
        WEB = "web", "Web pages"
        GITHUB = "github", "GitHub repository"
        SLACK = "slack", "Slack workspace"
        CONFLUENCE = "confluence", "Confluence Cloud"
        GOOGLE_DRIVE = "google_drive", "Google Drive"

    class SyncStatus(models.TextChoices):
        NEVER = "never", "Never synced"
        RUNNING = "running", "Running"
        OK = "ok", "OK"
        FAILED = "failed", "Failed"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="connectors")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    config = models.JSONField(default=dict, blank=True)
    environment = models.ForeignKey(
        Environment, null=True, blank=True, on_delete=models.PROTECT, related_name="connectors"
    )
    default_is_public = models.BooleanField(
        default=False,
        help_text="Pulled documents whose source names no ACL are visible to everyone in the tenant.",
    )
    default_principals = models.ManyToManyField(
        Principal,
        blank=True,
        related_name="default_for_connectors",
        help_text="Users and groups that may see pulled documents whose source names no ACL.",
    )
    enabled = models.BooleanField(default=True)
    sync_interval = models.DurationField(default=timedelta(hours=1))
    credential_sealed = models.TextField(
        blank=True, editable=False, help_text="The source's credential, encrypted (knowledge.credentials)."
    )
    permission_sync_interval = models.DurationField(
        default=timedelta(minutes=10),
        help_text="How often permissions and groups are re-read between syncs (kinds that can).",
    )
    permissions_synced_at = models.DateTimeField(null=True, blank=True)
    source_cursor = models.CharField(
        max_length=500,
        blank=True,
        editable=False,
        help_text="Where the source's change feed was read up to (a Drive page token); blank: list in full.",
    )
    last_sync_status = models.CharField(max_length=8, choices=SyncStatus.choices, default=SyncStatus.NEVER)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    last_sync_error_count = models.PositiveIntegerField(default=0)
    last_sync_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tenant__slug", "name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="connector_unique_name_per_tenant"),
            models.CheckConstraint(
                condition=models.Q(
                    kind__in=["api", "filesystem", "web", "github", "slack", "confluence", "google_drive"]
                ),
                name="connector_kind_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.name}"

    def credential(self) -> str:
        """The decrypted credential ("" when none); CredentialUnreadable when the keys changed."""
        return credentials.unseal(self.credential_sealed)

    def set_credential(self, credential: str) -> None:
        self.credential_sealed = credentials.seal(credential)

    @property
    def pulls(self) -> bool:
        """Whether workers sync this connector from its source (the API kind is pushed to)."""
        return self.kind in kind_names() and connector_kind(self.kind).pulls

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if not isinstance(self.config, dict):
            raise ValidationError({"config": "must be a JSON object"})
        problem = json_problem(self.config)
        if problem:
            raise ValidationError({"config": problem})
        if self.kind in kind_names():
            errors.update(connector_kind(self.kind).validate_config(self.config))
        if self.environment is not None and self.tenant_id and self.environment.tenant_id != self.tenant_id:
            errors["environment"] = "The environment belongs to another tenant."
        if self.permission_sync_interval is not None and not (
            timedelta(minutes=1) <= self.permission_sync_interval <= MAX_SYNC_INTERVAL
        ):
            errors["permission_sync_interval"] = "Must be between a minute and a year."
        if self.sync_interval is not None and self.sync_interval < timedelta(minutes=1):
            errors["sync_interval"] = "Must be at least one minute."
        if self.sync_interval is not None and self.sync_interval > MAX_SYNC_INTERVAL:
            errors["sync_interval"] = "Must be at most a year."
        if (
            self.tenant_id
            and Connector.objects.filter(tenant_id=self.tenant_id, name=self.name)
            .exclude(pk=self.pk)
            .exists()
        ):
            errors["name"] = "The tenant already has a connector of this name."
        if errors:
            raise ValidationError(errors)
