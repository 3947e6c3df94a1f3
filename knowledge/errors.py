"""Domain errors; the API's exception handler maps each to a 4xx response."""

from __future__ import annotations


class KnowledgeError(Exception):
    """Base class; `field` names the offending input where there is one."""

    status_code = 400

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidInput(KnowledgeError):
    """The request is well-formed but a value is unacceptable."""


class NotFound(KnowledgeError):
    status_code = 404


class PermissionDenied(KnowledgeError):
    status_code = 403


class Conflict(KnowledgeError):
    """The request clashes with the stored state (a connector of the wrong kind, say)."""

    status_code = 409


class PayloadTooLarge(KnowledgeError):
    status_code = 413


class ServiceUnavailable(KnowledgeError):
    """A service the request needs (an embedding API, say) failed; retrying later may succeed."""

    status_code = 503
