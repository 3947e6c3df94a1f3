"""One exception handler: every error becomes a JSON body naming the field and the problem."""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler

from knowledge.errors import KnowledgeError
from knowledge.pipeline.embedders.base import EmbedderError
from retrieval_backends.base import BackendUnavailable

logger = logging.getLogger(__name__)


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


RETRY_AFTER_SECONDS = 5
UNAVAILABLE_MESSAGE = "A service the API depends on is unavailable; retry in a few seconds."
EMBEDDER_DOWN_MESSAGE = "The embedding service is unavailable; retry in a few seconds."
EMBEDDER_REJECTED_MESSAGE = (
    "The embedding service rejected the request; an administrator must check the embedder's "
    "configuration (the server log has the details)."
)
KNOWLEDGE_CODES = {
    400: "invalid_input",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    413: "payload_too_large",
}


def _body(code: str, message: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"error": code, "message": message}
    if fields:
        body["fields"] = fields
    return body


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """Nested serializer errors as flat `{"acl.users.0": ["Enter a valid email address."]}`."""
    if isinstance(detail, dict):
        items: list[tuple[str, Any]] = [(str(k), v) for k, v in detail.items()]
    elif isinstance(detail, list) and not all(isinstance(item, str) for item in detail):
        items = [(str(i), v) for i, v in enumerate(detail) if v]  # per-item errors; valid items are empty
    else:
        return {prefix or api_settings.NON_FIELD_ERRORS_KEY: [str(m) for m in _as_list(detail)]}
    flat: dict[str, list[str]] = {}
    for key, value in items:
        flat.update(flatten_errors(value, f"{prefix}.{key}" if prefix else key))
    return flat


def _as_list(detail: Any) -> list[Any]:
    return detail if isinstance(detail, list) else [detail]


def _validation_body(detail: Any) -> dict[str, Any]:
    fields = flatten_errors(detail) or {api_settings.NON_FIELD_ERRORS_KEY: ["invalid input"]}
    name, messages = next(iter(fields.items()))
    problem = messages[0] if messages else "invalid input"
    message = problem if name == api_settings.NON_FIELD_ERRORS_KEY else f"{name}: {problem}"
    return _body("invalid_input", message, fields)


def is_outage(exc: BaseException | None) -> bool:
    """Whether the error means a dependency is down (PostgreSQL unreachable, the backend unavailable),
    as opposed to a bug: such requests answer 503 with Retry-After, not 500."""
    if isinstance(exc, BackendUnavailable | OperationalError | InterfaceError):
        return True
    return isinstance(exc, DatabaseError) and isinstance(exc.__cause__, OperationalError | InterfaceError)


def unavailable_response(
    message: str = UNAVAILABLE_MESSAGE, fields: dict[str, list[str]] | None = None
) -> Response:
    """503 with Retry-After: a dependency is down, and the same request may succeed shortly."""
    return Response(
        _body("service_unavailable", message, fields),
        status=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


def _embedder_failed(exc: EmbedderError) -> Response:
    """The embedding API failed: 503 when a retry may help, else 502; its URL and reply stay in the log."""
    logger.warning("API request failed in the embedder: %s", exc)
    if exc.permanent:
        return Response(_body("bad_gateway", EMBEDDER_REJECTED_MESSAGE), status=status.HTTP_502_BAD_GATEWAY)
    return unavailable_response(EMBEDDER_DOWN_MESSAGE)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    if is_outage(exc):
        logger.warning("API request failed on an unavailable dependency: %s", exc, exc_info=exc)
        return unavailable_response()
    if isinstance(exc, EmbedderError):
        return _embedder_failed(exc)
    if isinstance(exc, RecursionError):  # JSON nested too deeply for the parser
        return Response(
            _body("invalid_input", "The request body is nested too deeply."),
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, KnowledgeError):
        fields = {exc.field: [exc.message]} if exc.field else None
        if exc.status_code == status.HTTP_503_SERVICE_UNAVAILABLE:
            return unavailable_response(exc.message, fields)
        return Response(
            _body(KNOWLEDGE_CODES.get(exc.status_code, "error"), exc.message, fields), status=exc.status_code
        )
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    response = exception_handler(exc, context)
    if response is None:
        logger.exception("unhandled API error", exc_info=exc)
        return Response(_body("server_error", "Internal error; it has been logged."), status=500)
    detail = response.data
    if isinstance(exc, exceptions.ValidationError):
        response.data = _validation_body(detail)
    else:
        text = detail.get("detail", detail) if isinstance(detail, dict) else detail
        code = exc.default_code if isinstance(exc, exceptions.APIException) else "error"
        response.data = _body(str(code), str(text[0] if isinstance(text, list) and text else text))
    return response


def json_or_html_404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Unmatched /api/ URLs answer JSON like every other API error; other paths keep Django's page."""
    if request.path.startswith("/api/"):
        return JsonResponse(_body("not_found", f"no API endpoint at {request.path}"), status=404)
    return defaults.page_not_found(request, exception or Http404())


def json_or_html_500(request: HttpRequest) -> HttpResponse:
    """Uncaught errors outside DRF views: an outage is a 503 with Retry-After, anything else a 500."""
    if is_outage(sys.exc_info()[1]):
        if request.path.startswith("/api/"):
            response: HttpResponse = JsonResponse(
                _body("service_unavailable", UNAVAILABLE_MESSAGE), status=503
            )
        else:
            response = HttpResponse(OUTAGE_PAGE, status=503, content_type="text/html; charset=utf-8")
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    if request.path.startswith("/api/"):
        return JsonResponse(_body("server_error", "Internal error; it has been logged."), status=500)
    return defaults.server_error(request)


OUTAGE_PAGE = (
    "<!doctype html><title>Temporarily unavailable</title><h1>Temporarily unavailable</h1>"
    "<p>The knowledge base cannot reach its database right now. Please retry in a few seconds.</p>"
)
