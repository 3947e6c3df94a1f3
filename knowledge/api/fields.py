"""Serializer fields that refuse values of the wrong JSON type instead of coercing them (5 → "5")."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from knowledge.json_values import json_problem
from knowledge.pipeline.stages.registry import request_stage_schema


class JsonTypeMixin(serializers.Field):  # type: ignore[type-arg]
    """Checks the JSON type before the field's own parsing; booleans are never numbers."""

    json_types: tuple[type, ...] = ()
    json_type_name = ""

    def to_internal_value(self, data: Any) -> Any:
        wrong_bool = isinstance(data, bool) and bool not in self.json_types
        if wrong_bool or not isinstance(data, self.json_types):
            raise serializers.ValidationError(f"Must be {self.json_type_name}.", code="invalid")
        return super().to_internal_value(data)


class StrictCharField(JsonTypeMixin, serializers.CharField):
    """Kept as sent: trimming would change ids and let a value past `max_length` (as documented)."""

    json_types, json_type_name = (str,), "a string"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{"trim_whitespace": False, **kwargs})


class StrictSlugField(JsonTypeMixin, serializers.SlugField):
    json_types, json_type_name = (str,), "a string"


class StrictEmailField(JsonTypeMixin, serializers.EmailField):
    json_types, json_type_name = (str,), "a string"


class StrictURLField(JsonTypeMixin, serializers.URLField):
    json_types, json_type_name = (str,), "a string"


class StrictBooleanField(JsonTypeMixin, serializers.BooleanField):
    json_types, json_type_name = (bool,), "true or false"


class StrictIntegerField(JsonTypeMixin, serializers.IntegerField):
    json_types, json_type_name = (int, float), "an integer"


class StrictFloatField(JsonTypeMixin, serializers.FloatField):
    json_types, json_type_name = (int, float), "a number"


class JsonObjectField(serializers.DictField):
    """A JSON object stored as jsonb: no NUL or lone surrogate characters, bounded nesting."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        problem = json_problem(data)  # before DRF walks it (recursively)
        if problem:
            raise serializers.ValidationError(problem, code="invalid_json_value")
        value: dict[str, Any] = super().to_internal_value(data)
        return value


@extend_schema_field(request_stage_schema())
class StageSpecField(serializers.Field):  # type: ignore[type-arg]
    """A stage of a request: its name, or {"name", "options"} (checked against the allow-list later)."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str) and data.strip():
            return data.strip()
        if isinstance(data, dict) and isinstance(data.get("name"), str) and set(data) <= {"name", "options"}:
            if not isinstance(data.get("options", {}), dict):
                raise serializers.ValidationError("options must be an object")
            return {"name": data["name"], "options": dict(data.get("options", {}))}
        raise serializers.ValidationError('a stage is a name or {"name": ..., "options": {...}}')

    def to_representation(self, value: Any) -> Any:
        return value
