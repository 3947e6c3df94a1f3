"""System checks: the serving retrieval backend must be a known alias or an importable backend class."""

from __future__ import annotations

from typing import Any

from django.core.checks import Error, register
from django.core.exceptions import ImproperlyConfigured

from retrieval_backends.registry import BACKENDS, load_backend_class, serving_spec


@register()
def check_retrieval_backend(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    try:
        spec = serving_spec()
    except ImproperlyConfigured as exc:
        return [Error(str(exc), id="retrieval_backends.E001")]
    if spec.name not in BACKENDS.aliases() and "." not in spec.path:
        return [
            Error(
                f"KNOWLEDGE_RETRIEVAL_BACKEND={spec.name!r} is not a known backend.",
                hint=f"Use one of: {', '.join(sorted(BACKENDS.aliases()))}, or a dotted path.",
                id="retrieval_backends.E001",
            )
        ]
    try:
        load_backend_class(spec)
    except ImproperlyConfigured as exc:
        return [Error(str(exc), id="retrieval_backends.E002")]
    return []
