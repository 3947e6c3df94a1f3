"""The canonical spelling of principal names, applied on every write path and in every look-up.

A user id is an e-mail address: NFKC-normalised, trimmed and case-folded, so `Erin@Example.com ` and
`erin@example.com` are one user. A group name is NFKC-normalised and trimmed, its runs of whitespace
made one space, and its case kept: sources treat group names as case-sensitive often enough (POSIX
and LDAP groups, GitHub team slugs differ from names) that folding could merge two groups and widen
access, while keeping case can only fail closed (a grant to `HR` does not reach members of `hr`).
"""

from __future__ import annotations

import re
import unicodedata

USER = "user"
GROUP = "group"
_SPACES = re.compile(r"\s+")


def user_id(value: str) -> str:
    """The canonical form of a user's e-mail address."""
    return unicodedata.normalize("NFKC", value).strip().casefold()


def group_name(value: str) -> str:
    """The canonical form of a group's name."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", value)).strip()


def principal_name(kind: str, value: str) -> str:
    """The canonical form of a principal's external id of this kind ("user" or "group")."""
    return user_id(value) if kind == USER else group_name(value)
