"""Refuses API requests whose body Django cannot see: chunked uploads without a Content-Length."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

MESSAGE = "Send the body with a Content-Length header; chunked transfer encoding is not accepted."


class RequireContentLength:
    """Django reads a body without Content-Length as empty, so a chunked upload would be refused as if
    every field were missing; answer 411 saying what is wrong instead."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        meta = request.META
        chunked = "chunked" in meta.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked and request.path.startswith("/api/") and not int(meta.get("CONTENT_LENGTH") or 0):
            return JsonResponse({"error": "length_required", "message": MESSAGE}, status=411)
        return self.get_response(request)
