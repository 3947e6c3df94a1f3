"""Connector credentials sealed at rest (Fernet: AES-128-CBC with an HMAC), with keys from the
environment, and their masked form for the admin."""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class CredentialUnreadable(Exception):
    """A sealed credential none of the configured keys opens (a key was removed or changed)."""


def _keys() -> MultiFernet:
    configured = list(settings.KNOWLEDGE_CREDENTIAL_KEYS)
    if not configured:
        digest = hashlib.sha256(b"knowledge-credentials:" + settings.SECRET_KEY.encode()).digest()
        configured = [base64.urlsafe_b64encode(digest).decode()]
    return MultiFernet([Fernet(k.encode()) for k in configured])


def seal(credential: str) -> str:
    """The credential encrypted with the first key ("" stays "")."""
    return _keys().encrypt(credential.encode()).decode() if credential else ""


def unseal(sealed: str) -> str:
    if not sealed:
        return ""
    try:
        return _keys().decrypt(sealed.encode()).decode()
    except InvalidToken as exc:
        raise CredentialUnreadable(
            "the stored credential cannot be decrypted with KNOWLEDGE_CREDENTIAL_KEYS; enter it again"
        ) from exc


def reseal(sealed: str) -> str:
    """The credential re-encrypted with the first key (after a key rotation)."""
    return _keys().rotate(sealed.encode()).decode() if sealed else ""


def masked(credential: str) -> str:
    """What the admin shows: never more than the last four characters of a long credential."""
    if not credential:
        return ""
    return "•" * 8 + (credential[-4:] if len(credential) >= 16 else "")
