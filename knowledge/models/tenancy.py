"""Tenants (isolated applications, the API's `source_account_id`) and their environments."""

from __future__ import annotations

from django.db import models


class Tenant(models.Model):
    """An isolated knowledge base; nothing ever crosses tenants."""

    DEFAULT_SLUG = "primary"

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    rate_limit_per_minute = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Requests per minute all of the tenant's keys may make together (429 above). Empty: "
        "KNOWLEDGE_TENANT_RATE_LIMIT; 0: unlimited.",
    )

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Environment(models.Model):
    """A deployment stage (e.g. production, staging); documents without one are visible in all."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="environments")
    slug = models.SlugField(max_length=64)
    name = models.CharField(max_length=200)

    class Meta:
        ordering = ["tenant__slug", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "slug"], name="environment_unique_slug_per_tenant"),
        ]

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.slug}"
