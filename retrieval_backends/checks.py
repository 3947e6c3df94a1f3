"""System checks: the selected retrieval backend must exist and import."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, register
from django.core.exceptions import ImproperlyConfigured

from retrieval_backends.registry import load_backend_class


@register()
def check_retrieval_backend(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    name = getattr(settings, "RETRIEVAL_BACKEND_NAME", "")
    aliases = getattr(settings, "RETRIEVAL_BACKEND_ALIASES", {})
    path = str(settings.RETRIEVAL_BACKEND.get("BACKEND", ""))
    if name not in aliases and "." not in name:
        return [
            Error(
                f"KNOWLEDGE_RETRIEVAL_BACKEND={name!r} is not a known backend.",
                hint=f"Use one of: {', '.join(sorted(aliases))}.",
                id="retrieval_backends.E001",
            )
        ]
    try:
        load_backend_class(path)
    except ImproperlyConfigured as exc:
        return [Error(str(exc), id="retrieval_backends.E002")]
    return []
