"""What the staff pages let a user do: model permissions, never `is_staff` alone.

Viewing documents (`knowledge.view_document`) opens the playground with public-only searches;
searching as another user and bypassing ACLs need permissions of their own, as reading the eval
reports does. Superusers have every permission; an admin grants the others to groups. Every decision
is logged with the user who asked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

logger = logging.getLogger("knowledge.pages.access")

VIEW_DOCUMENTS = "knowledge.view_document"
SEARCH_AS_USER = "knowledge.search_as_user"
SEARCH_BYPASS_ACL = "knowledge.search_bypass_acl"
VIEW_EVAL_REPORTS = "knowledge.view_eval_reports"

View = TypeVar("View", bound=Callable[..., Any])


def allowed(user: Any, permission: str, what: str) -> bool:
    """Whether the user has the permission; the decision is logged either way."""
    granted = bool(user.has_perm(permission))
    log = logger.info if granted else logger.warning
    log("staff page: %s %s %s (%s)", username(user), "may" if granted else "may not", what, permission)
    return granted


def require(permission: str, what: str) -> Callable[[View], View]:
    """A view decorator: 403 (and a log line) for a user without the permission."""

    def decorate(view: View) -> View:
        @wraps(view)
        def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            if not allowed(request.user, permission, what):
                raise PermissionDenied(f"you need the {permission} permission to {what}")
            return view(request, *args, **kwargs)

        return cast(View, guarded)

    return decorate


def username(user: Any) -> str:
    return str(getattr(user, "username", "") or "anonymous")
