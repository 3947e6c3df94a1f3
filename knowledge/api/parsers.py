"""JSON and NDJSON parsers that enforce the request size limit (DRF reads the raw stream, not Django's)."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, JSONParser

from knowledge.api.errors import PayloadTooLarge


def _check_size(parser_context: Any) -> None:
    """A view may raise the limit (`max_request_bytes`, the batch endpoint does); the default is
    KNOWLEDGE_MAX_REQUEST_BYTES."""
    context = parser_context or {}
    limit = getattr(context.get("view"), "max_request_bytes", None) or settings.KNOWLEDGE_MAX_REQUEST_BYTES
    request = context.get("request")
    declared = int(request.META.get("CONTENT_LENGTH") or 0) if request is not None else 0
    if declared > limit:
        raise PayloadTooLarge(f"The request body is {declared} bytes; the limit is {limit}.")


class LimitedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        _check_size(parser_context)
        return super().parse(stream, media_type, parser_context)


class NDJSONParser(BaseParser):
    """Newline-delimited JSON (`application/x-ndjson`): one value per line, blank lines skipped."""

    media_type = "application/x-ndjson"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        _check_size(parser_context)
        values = []
        for number, raw in enumerate(stream.read().split(b"\n"), start=1):
            if not raw.strip():
                continue
            try:
                values.append(json.loads(raw.decode("utf-8")))
            except (UnicodeDecodeError, ValueError) as exc:
                raise ParseError(f"NDJSON line {number} is not valid JSON: {exc}") from exc
        return values
