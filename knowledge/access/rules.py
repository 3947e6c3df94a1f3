"""The override rule: a document's effective ACL is its source's, unless an admin overrode it (then the
admin's holds until cleared, whatever the source says meanwhile)."""

from __future__ import annotations

from typing import Protocol


class Overridable(Protocol):
    @property
    def acl_overridden(self) -> bool: ...


def source_acl_applies(document: Overridable) -> bool:
    """Whether a change of the document's source ACL changes its effective ACL."""
    return not document.acl_overridden
