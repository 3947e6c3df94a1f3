"""API key lifecycle writes: rotation with an overlap window, and revocation."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from knowledge.errors import Conflict
from knowledge.models import ApiKey

DEFAULT_OVERLAP = timedelta(hours=24)


def api_key_rotate(*, key_id: int, overlap: timedelta = DEFAULT_OVERLAP) -> str:
    """Give the key a new secret and return its plain text (shown once); the old secret keeps working
    for `overlap`, so clients can switch without downtime. A second rotation ends the first overlap."""
    if overlap < timedelta(0):
        raise ValueError("the overlap cannot be negative")
    with transaction.atomic():
        key = ApiKey.objects.select_for_update().get(pk=key_id)
        now = timezone.now()
        if key.revoked_at is not None:
            raise Conflict(f"key {key.lookup_id} is revoked; issue a new key instead")
        if key.is_expired(now):
            raise Conflict(f"key {key.lookup_id} has expired; extend its expiry or issue a new key")
        plain = key.rotate_secret(now=now, overlap=overlap)
        key.save(update_fields=["key_hash", "previous_key_hash", "previous_valid_until"])
    return plain


def api_keys_revoke(*, key_ids: Iterable[int]) -> int:
    """Revoke the keys (at once, every secret of each); already revoked ones keep their time."""
    now = timezone.now()
    return ApiKey.objects.filter(pk__in=list(key_ids), revoked_at__isnull=True).update(
        revoked_at=now, previous_valid_until=None
    )
