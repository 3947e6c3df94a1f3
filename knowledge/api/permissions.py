"""Scope permissions of API keys."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from knowledge.api.authentication import ApiClient


class HasScope(BasePermission):
    """Requires an API key carrying `scope` (set by subclasses)."""

    scope = ""
    message = "This API key lacks the required scope."

    def has_permission(self, request: Request, view: Any) -> bool:
        client = request.user
        if not isinstance(client, ApiClient):
            return False
        self.message = f"This API key lacks the '{self.scope}' scope."
        return client.key.has_scope(self.scope)


class CanSearch(HasScope):
    scope = "search"


class CanIndex(HasScope):
    scope = "index"
