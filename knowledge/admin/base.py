"""Admin plumbing: service errors shown as messages, and deletes that go through a service."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import models
from django.db.models import Model, QuerySet
from django.forms.fields import InvalidJSONInput
from django.http import HttpRequest

from knowledge.errors import KnowledgeError
from knowledge.json_values import has_lone_surrogate, json_problem
from knowledge.models import Chunk, ChunkEmbedding


def limit_choices(form: Any, name: str, queryset: QuerySet[Any], help_text: str | None = None) -> None:
    """Restrict a form class's relation field to `queryset` (e.g. the object's tenant)."""
    field = form.base_fields.get(name)
    if field is not None:
        field.queryset = queryset
        if help_text:
            field.help_text = help_text


def actor(request: HttpRequest) -> str:
    """Who did it, as recorded on overrides."""
    user = getattr(request, "user", None)
    return f"admin:{getattr(user, 'username', '') or 'unknown'}"


class JsonValueField(forms.JSONField):
    """The admin's JSON inputs: nesting too deep to parse, NUL and lone surrogates are form errors."""

    def to_python(self, value: Any) -> Any:
        try:
            parsed = super().to_python(value)
        except RecursionError:
            raise forms.ValidationError("Nested too deeply.") from None
        problem = json_problem(parsed)
        if problem:
            raise forms.ValidationError(problem)
        return parsed

    def bound_data(self, data: Any, initial: Any) -> Any:
        try:
            return super().bound_data(data, initial)
        except RecursionError:
            return InvalidJSONInput(data)  # shown back as typed, with the error

    def prepare_value(self, value: Any) -> Any:
        text = super().prepare_value(value)
        if isinstance(text, str) and has_lone_surrogate(text):
            return json.dumps(value, cls=self.encoder)  # escaped: a lone surrogate cannot be sent as UTF-8
        return text


class ServiceDeleteAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Deletion (the change page and "delete selected") calls `delete_one` instead of an ORM cascade.

    Django's own confirmation page still asks first, listing what goes with the object. JSON fields
    use `JsonValueField`.
    """

    formfield_overrides = {models.JSONField: {"form_class": JsonValueField}}

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        # Chunks and vectors are derived data the service deletes; the admin may not delete them itself.
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        derived = {str(m._meta.verbose_name) for m in (Chunk, ChunkEmbedding)}
        return deleted, counts, {p for p in perms_needed if p not in derived}, protected

    def delete_one(self, request: HttpRequest, obj: Any) -> str:
        """Delete through the service; returns a message for the user."""
        raise NotImplementedError

    def delete_model(self, request: HttpRequest, obj: Model) -> None:
        self._run(request, lambda: self.delete_one(request, obj))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset.order_by("pk"):
            self._run(request, partial(self.delete_one, request, obj))

    def _run(self, request: HttpRequest, call: Callable[[], str]) -> None:
        try:
            note = call()
        except KnowledgeError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return
        if note:
            self.message_user(request, note, messages.INFO)


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Derived or audit data: written by the services only; no one adds, edits or deletes it here."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
