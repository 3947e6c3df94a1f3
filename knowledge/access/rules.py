"""The override rule: a document's effective ACL is its source's, unless an admin overrode it (then the
admin's holds until cleared, whatever the source says meanwhile)."""

from __future__ import annotations

from typing import Protocol, TypeVar

T = TypeVar("T")


class Overridable(Protocol):
    @property
    def acl_overridden(self) -> bool: ...


def source_acl_applies(document: Overridable) -> bool:
    """Whether a change of the document's source ACL changes its effective ACL."""
    return not document.acl_overridden


def effective_after_source_change(document: Overridable, *, source: T, current: T) -> T:
    """The document's effective ACL (or grants) once its source's became `source`: that, unless an
    admin's override holds `current` in place."""
    return source if source_acl_applies(document) else current
