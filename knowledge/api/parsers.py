"""A JSON parser that enforces the request size limit (DRF reads the raw stream, bypassing Django's)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.parsers import JSONParser

from knowledge.api.errors import PayloadTooLarge


class LimitedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.KNOWLEDGE_MAX_REQUEST_BYTES
        request = (parser_context or {}).get("request")
        declared = int(request.META.get("CONTENT_LENGTH") or 0) if request is not None else 0
        if declared > limit:
            raise PayloadTooLarge(f"The request body is {declared} bytes; the limit is {limit}.")
        return super().parse(stream, media_type, parser_context)
