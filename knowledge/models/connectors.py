"""Connectors: where documents come from (API push, a filesystem folder, web pages)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import urlparse

from django.core.exceptions import ValidationError
from django.db import models

from knowledge.models.tenancy import Environment, Tenant


def _validate_filesystem(config: dict[str, Any]) -> dict[str, str]:
    errors: dict[str, str] = {}
    path = config.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        errors["path"] = "required: an absolute directory path, e.g. /srv/docs"
    patterns = config.get("patterns", ["**/*.md", "**/*.txt"])
    if not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns):
        errors["patterns"] = "must be a list of glob patterns, e.g. ['**/*.md']"
    return errors


def _validate_web(config: dict[str, Any]) -> dict[str, str]:
    urls = config.get("urls")
    if not isinstance(urls, list) or not urls:
        return {"urls": "required: a non-empty list of http(s) URLs"}
    bad = [u for u in urls if not isinstance(u, str) or urlparse(u).scheme not in {"http", "https"}]
    if bad:
        return {"urls": f"not http(s) URLs: {bad[:3]}"}
    return {}


def _validate_api(config: dict[str, Any]) -> dict[str, str]:
    if config:
        return {"config": "an api (push) connector takes no configuration; leave it {}"}
    return {}


CONFIG_VALIDATORS = {"api": _validate_api, "filesystem": _validate_filesystem, "web": _validate_web}
ALLOWED_KEYS = {"api": set(), "filesystem": {"path", "patterns"}, "web": {"urls"}}


class Connector(models.Model):
    """A source of documents for one tenant, synced by Celery workers."""

    class Kind(models.TextChoices):
        API = "api", "API push"
        FILESYSTEM = "filesystem", "Filesystem"
        WEB = "web", "Web pages"

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
    enabled = models.BooleanField(default=True)
    sync_interval = models.DurationField(default=timedelta(hours=1))
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
                condition=models.Q(kind__in=["api", "filesystem", "web"]), name="connector_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.name}"

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if not isinstance(self.config, dict):
            raise ValidationError({"config": "must be a JSON object"})
        validator = CONFIG_VALIDATORS.get(self.kind)
        if validator is not None:
            unknown = set(self.config) - ALLOWED_KEYS[self.kind]
            if unknown and self.kind != self.Kind.API:
                errors["config"] = f"unknown keys for a {self.kind} connector: {sorted(unknown)}"
            for key, message in validator(self.config).items():
                errors.setdefault("config", f"{key}: {message}")
        if self.environment is not None and self.tenant_id and self.environment.tenant_id != self.tenant_id:
            errors["environment"] = "The environment belongs to another tenant."
        if self.sync_interval is not None and self.sync_interval < timedelta(minutes=1):
            errors["sync_interval"] = "Must be at least one minute."
        if errors:
            raise ValidationError(errors)
