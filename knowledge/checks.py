"""System checks: every configured pipeline plugin must satisfy its layer's contract (no model is loaded)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.core.checks import CheckMessage, Error
from django.core.exceptions import ImproperlyConfigured

from knowledge.pipeline.registry import LAYERS, env_variable, plugins_file
from knowledge.pipeline.stages.registry import configured_stages
from knowledge.pipeline.validation import validate_pipeline


def plugin_hint(layer: str) -> str:
    """What to change to fix a layer's plugin."""
    names = ", ".join(sorted(LAYERS[layer].aliases()))
    return (
        f"Set {env_variable(layer)} or the {layer!r} entry of {plugins_file()} to one of {names}, or to the "
        f"dotted path of a {LAYERS[layer].base.__name__} subclass; `manage.py doctor` checks it in full."
    )


def check_pipeline_plugins(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """One error per problem of each layer's configured plugin (class and attributes only).

    A broken plugins file breaks every layer the same way; it is reported once.
    """
    errors: list[CheckMessage] = []
    seen: set[str] = set()
    for report in validate_pipeline(deep=False):
        for problem in report.problems:
            cause = problem.removeprefix(f"{report.layer} configuration: ")
            if cause not in seen:
                seen.add(cause)
                errors.append(Error(problem, hint=plugin_hint(report.layer), id="knowledge.E001"))
    return errors


def check_pipeline_stages(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """The configured stages import, take their options, and come in order (query stages first)."""
    try:
        configured_stages()
    except ImproperlyConfigured as exc:
        hint = "Set KNOWLEDGE_STAGES (or `stages` in plugins.json) to valid stages, query stages first."
        return [Error(str(exc), hint=hint, id="knowledge.E002")]
    return []
