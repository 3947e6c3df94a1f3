"""Stages by name, the configured pipeline (KNOWLEDGE_STAGES, or `stages` in plugins.json), and the
bounded per-request stages an API caller may ask for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from knowledge.errors import InvalidInput
from knowledge.pipeline.registry import file_entry, plugins_json
from knowledge.pipeline.stages.base import Stage, order_problem
from knowledge.plugins import Plugins

STAGES: Plugins[Stage] = Plugins("stage", Stage, "KNOWLEDGE_PLUGINS", "stage")
# Today's fixed tail, as stages: parent expansion, then the configured reranker and compressor.
DEFAULT_STAGES = ("parent_expand", "reranker", "compressor")
MAX_REQUEST_STAGES = 8
# What a request may set, per stage: option -> (type, low, high) or a tuple of allowed values.
REQUEST_OPTIONS: dict[str, dict[str, Any]] = {
    "query_planner": {"max_queries": (int, 1, 8)},
    "multi_query": {"count": (int, 1, 6), "include_original": (bool,)},
    "parent_expand": {"max_parent_chars": (int, 100, 20000), "missing": ("warn", "ignore")},
    "compress": {"max_chars_per_hit": (int, 50, 5000), "drop_empty": (bool,), "mode": ("extractive", "llm")},
    "diversify": {"lambda": (float, 0.0, 1.0), "limit": (int, 1, 100), "source_penalty": (float, 0.0, 1.0)},
    "decay": {"half_life": (str,), "field": (str,), "missing": ("ignore", "drop")},
    "reranker": {},
    "compressor": {"token_budget": (int, 1, 100000)},
}


def build_stage(name: str, options: dict[str, Any] | None = None, origin: str = "the stages") -> Stage:
    """A stage from a built-in name or a dotted path to a Stage subclass (the shared loader's checks)."""
    spec = STAGES.spec({"CLASS": name, "OPTIONS": options or {}}, origin)
    cls = STAGES.load(spec)
    if cls.phase not in {"query", "hit"}:
        raise ImproperlyConfigured(f"stage {name!r}: {spec.path} is not a query or hit Stage subclass")
    return STAGES.build(spec)


def _spec(entry: Any, origin: str) -> tuple[str, dict[str, Any]]:
    spec = STAGES.spec(file_entry(entry), origin)
    return spec.name, dict(spec.options)


def configured_specs() -> list[tuple[str, dict[str, Any]]]:
    """KNOWLEDGE_STAGES (comma-separated names) beats `stages` in plugins.json beats the default."""
    names = [n.strip() for n in (getattr(settings, "KNOWLEDGE_STAGES", None) or "").split(",") if n.strip()]
    if names:
        return [(n, {}) for n in names]
    entries = plugins_json().get("stages")
    if entries is None:
        return [(n, {}) for n in DEFAULT_STAGES]
    if not isinstance(entries, list):
        raise ImproperlyConfigured("plugins.json 'stages' must be a list")
    return [_spec(e, "plugins.json 'stages'") for e in entries]


def configured_stages() -> list[Stage]:
    """The configured pipeline; options of built-in stages pass the same bounds as a request's."""
    stages = [build_stage(name, _bounded(name, options)) for name, options in configured_specs()]
    problem = order_problem(stages) or next(
        (f"{stage.name}: {p}" for stage in stages if (p := stage.options_problem())), None
    )
    if problem:
        raise ImproperlyConfigured(f"stages: {problem}")
    return stages


def _check_option(stage: str, name: str, value: Any, rule: tuple[Any, ...]) -> Any:
    field = f"stages.{stage}.{name}"
    if rule and isinstance(rule[0], type):
        kind = rule[0]
        if kind is bool and not isinstance(value, bool):
            raise InvalidInput("must be true or false", field=field)
        if kind in (int, float) and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InvalidInput("must be a number", field=field)
        if kind is int and not float(value).is_integer():
            raise InvalidInput("must be a whole number", field=field)
        if kind in (int, float) and not rule[1] <= value <= rule[2]:
            raise InvalidInput(f"must be between {rule[1]} and {rule[2]}", field=field)
        if kind is str and (not isinstance(value, str) or len(value) > 200):
            raise InvalidInput("must be a string of at most 200 characters", field=field)
        return kind(value)
    if value not in rule:
        raise InvalidInput(f"must be one of {', '.join(map(str, rule))}", field=field)
    return value


def _bounded(name: str, options: dict[str, Any]) -> dict[str, Any]:
    rules = REQUEST_OPTIONS.get(name, {})
    try:
        return {k: _check_option(name, k, v, rules[k]) if k in rules else v for k, v in options.items()}
    except InvalidInput as exc:
        raise ImproperlyConfigured(f"{exc.field}: {exc.message}") from None


def request_stages(entries: Sequence[Any]) -> list[Stage]:
    """A request's `stages` list: allow-listed names with bounded options; a bad one is a 400."""
    if len(entries) > MAX_REQUEST_STAGES:
        raise InvalidInput(f"at most {MAX_REQUEST_STAGES} stages", field="stages")
    stages = []
    for entry in entries:
        name, options = (
            (entry, {}) if isinstance(entry, str) else (entry.get("name"), entry.get("options") or {})
        )
        if name not in REQUEST_OPTIONS:
            raise InvalidInput(
                f"unknown stage {name!r}; allowed: {', '.join(REQUEST_OPTIONS)}", field="stages"
            )
        allowed = {**REQUEST_OPTIONS[name], "strict": (bool,)}
        unknown = sorted(set(options) - set(allowed))
        if unknown:
            raise InvalidInput(f"unknown options {unknown} for {name}", field=f"stages.{name}")
        checked = {k: _check_option(name, k, v, allowed[k]) for k, v in options.items()}
        stage = build_stage(name, checked)
        problem = stage.options_problem()
        if problem:
            raise InvalidInput(problem, field=f"stages.{name}")
        stages.append(stage)
    problem = order_problem(stages)
    if problem:
        raise InvalidInput(problem, field="stages")
    return stages


def request_stage_schema() -> dict[str, Any]:
    """The OpenAPI schema of one entry of a request's `stages`: a name, or a name with its options and
    their bounds (REQUEST_OPTIONS, so the API docs and a fuzzer see exactly what is accepted)."""
    names = list(REQUEST_OPTIONS)
    objects = [
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": [name]},
                "options": {
                    "type": "object",
                    "properties": {
                        **{option: _option_schema(rule) for option, rule in rules.items()},
                        "strict": {"type": "boolean"},
                    },
                    "additionalProperties": False,
                },
            },
            "required": ["name"],
            "additionalProperties": False,
        }
        for name, rules in REQUEST_OPTIONS.items()
    ]
    return {"oneOf": [{"type": "string", "enum": names, "description": "A stage name."}, *objects]}


def _option_schema(rule: tuple[Any, ...]) -> dict[str, Any]:
    if rule and rule[0] is bool:
        return {"type": "boolean"}
    if rule and rule[0] in (int, float):
        kind = "integer" if rule[0] is int else "number"
        return {"type": kind, "minimum": rule[1], "maximum": rule[2]}
    if rule and rule[0] is str:
        return {"type": "string", "maxLength": 200}
    return {"enum": list(rule)}
