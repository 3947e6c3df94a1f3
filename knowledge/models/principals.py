"""Principals (users and groups) that document ACLs grant access to."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models

from knowledge import names
from knowledge.models.tenancy import Tenant
from retrieval_backends.types import principal_token


class Principal(models.Model):
    """A user (e-mail) or a group (name) of one tenant; users belong to groups."""

    class Kind(models.TextChoices):
        USER = "user", "User"
        GROUP = "group", "Group"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="principals")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    external_id = models.CharField(max_length=320, help_text="E-mail of a user or name of a group.")
    display_name = models.CharField(max_length=200, blank=True)
    groups = models.ManyToManyField(
        "self",
        symmetrical=False,
        blank=True,
        related_name="members",
        limit_choices_to={"kind": "group"},
    )

    class Meta:
        ordering = ["tenant__slug", "kind", "external_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "kind", "external_id"], name="principal_unique_external_id"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.external_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.external_id = names.principal_name(self.kind, self.external_id)
        super().save(*args, **kwargs)

    @property
    def acl_token(self) -> str:
        """The token chunks carry when this principal is granted access."""
        return principal_token(is_user=self.kind == self.Kind.USER, principal_id=self.pk)

    def clean(self) -> None:
        # Before the form's uniqueness check, so another spelling of an existing name is refused there.
        self.external_id = names.principal_name(self.kind, self.external_id or "")
        if not self.external_id:
            raise ValidationError({"external_id": "A principal needs a name that is not blank."})
        if self.kind == self.Kind.USER and "@" not in self.external_id:
            raise ValidationError({"external_id": "A user's external id must be an e-mail address."})
