"""API keys: bound to one tenant, stored only as a hash, with scopes and an ACL identity policy."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from knowledge.models.principals import Principal
from knowledge.models.tenancy import Tenant

KEY_PREFIX = "kb"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class ApiKey(models.Model):
    """A bearer key `kb_<lookup>_<secret>`; only the lookup id and a SHA-256 of the whole key are kept."""

    class Scope(models.TextChoices):
        SEARCH = "search", "Search"
        INDEX = "index", "Index and manage documents"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200)
    lookup_id = models.CharField(max_length=16, unique=True, editable=False)
    key_hash = models.CharField(max_length=64, editable=False)
    scopes = ArrayField(models.CharField(max_length=16, choices=Scope.choices), default=list)
    principal = models.ForeignKey(
        Principal,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        limit_choices_to={"kind": "user"},
        help_text="Fixed ACL identity of every search made with this key.",
    )
    on_behalf_of = models.BooleanField(
        default=False, help_text="May search on behalf of a user named in the request."
    )
    bypass_acl = models.BooleanField(default=False, help_text="May ask to ignore document ACLs.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Refused from then on (401 key_expired). Left empty on a new key: the default lifetime "
        "(KNOWLEDGE_API_KEY_DAYS); cleared later: never expires.",
    )
    # Rotation: the secret before the last rotation keeps working until `previous_valid_until`.
    previous_key_hash = models.CharField(max_length=64, blank=True, default="", editable=False)
    previous_valid_until = models.DateTimeField(null=True, blank=True, editable=False)
    rate_limit_per_minute = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Requests per minute this key may make (429 above). Empty: KNOWLEDGE_API_KEY_RATE_LIMIT; "
        "0: unlimited.",
    )

    class Meta:
        ordering = ["tenant__slug", "name"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.name} ({KEY_PREFIX}_{self.lookup_id}_…)"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self._state.adding and self.expires_at is None and settings.KNOWLEDGE_API_KEY_DAYS:
            self.expires_at = timezone.now() + timedelta(days=settings.KNOWLEDGE_API_KEY_DAYS)
        super().save(*args, **kwargs)

    @classmethod
    def issue(cls, **fields: object) -> tuple[ApiKey, str]:
        """Create a key; returns it with the plain-text key, which is never stored."""
        key = cls(**fields)
        plain = key.set_new_secret()
        key.save()
        return key, plain

    def set_new_secret(self) -> str:
        """Give the (unsaved) key a fresh lookup id and secret; returns the plain-text key."""
        self.lookup_id = secrets.token_hex(6)
        return self._fresh_secret()

    def rotate_secret(self, *, now: datetime, overlap: timedelta) -> str:
        """A new secret under the same lookup id; the current one keeps working for `overlap`."""
        self.previous_key_hash, self.previous_valid_until = self.key_hash, now + overlap
        return self._fresh_secret()

    def _fresh_secret(self) -> str:
        plain = f"{KEY_PREFIX}_{self.lookup_id}_{secrets.token_urlsafe(32)}"
        self.key_hash = hash_secret(plain)
        return plain

    def matches(self, plain: str, *, now: datetime | None = None) -> bool:
        """Whether `plain` is this key: its secret, or the one before a rotation within the overlap."""
        digest = hash_secret(plain)
        if hmac.compare_digest(self.key_hash, digest):
            return True
        within = self.previous_valid_until is not None and (now or timezone.now()) < self.previous_valid_until
        return within and bool(self.previous_key_hash) and hmac.compare_digest(self.previous_key_hash, digest)

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes

    def clean(self) -> None:
        principal = self.principal
        if principal is not None and self.tenant_id and principal.tenant_id != self.tenant_id:
            raise ValidationError({"principal": "The principal belongs to another tenant."})
        if principal is not None and principal.kind != Principal.Kind.USER:
            raise ValidationError({"principal": "A key's fixed identity must be a user, not a group."})
