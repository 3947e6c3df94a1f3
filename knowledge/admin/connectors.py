"""Connector admin: sync now, a default ACL that reaches its documents, deletes through the services."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from knowledge.admin.base import ServiceDeleteAdmin, limit_choices
from knowledge.models import Connector, Principal
from knowledge.services.deletion import connector_delete
from knowledge.services.edits import connector_apply_default_acl


class ConnectorForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = Connector
        fields = [
            *("tenant", "name", "kind", "config", "environment", "default_is_public", "default_principals"),
            *("enabled", "sync_interval"),
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        tenant = data.get("tenant") or getattr(self.instance, "tenant", None)
        foreign = [
            str(p) for p in data.get("default_principals") or [] if tenant and p.tenant_id != tenant.pk
        ]
        if foreign:
            self.add_error("default_principals", f"These belong to another tenant: {', '.join(foreign)}")
        return data


@admin.register(Connector)
class ConnectorAdmin(ServiceDeleteAdmin):
    form = ConnectorForm
    list_display = ["name", "tenant", "kind", "environment", "enabled", "last_sync_status", "last_synced_at"]
    list_filter = ["tenant", "kind", "enabled", "last_sync_status"]
    search_fields = ["name"]
    filter_horizontal = ["default_principals"]
    readonly_fields = ["last_sync_status", "last_synced_at", "last_sync_error_count", "last_sync_error"]
    actions = ["enable", "disable", "sync_now"]

    def get_readonly_fields(self, request: HttpRequest, obj: Connector | None = None) -> list[str]:
        fixed = ["tenant", "kind"] if obj is not None else []  # a connector never changes tenant
        return [*fixed, *self.readonly_fields]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        if obj is not None:
            limit_choices(form, "default_principals", Principal.objects.filter(tenant_id=obj.tenant_id))
        return form

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        if change and {"default_is_public", "default_principals"} & set(form.changed_data):
            count = connector_apply_default_acl(connector=form.instance)
            self.message_user(request, f"The new default ACL now applies to {count} document(s).")

    def delete_one(self, request: HttpRequest, obj: Connector) -> str:
        count = connector_delete(connector=obj)
        return f"{obj}: deleted with its {count} document(s), their chunks and vectors."

    @admin.action(description="Sync selected connectors now (on a Celery worker)")
    def sync_now(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        from knowledge.tasks import sync_connector

        pull = [c for c in queryset if c.pulls]
        for connector in pull:
            sync_connector.delay(connector.pk)
        self.message_user(request, f"{len(pull)} connector sync(s) queued.")

    @admin.action(description="Enable selected connectors")
    def enable(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        self.message_user(request, f"{queryset.update(enabled=True)} connector(s) enabled.")

    @admin.action(description="Disable selected connectors")
    def disable(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        self.message_user(request, f"{queryset.update(enabled=False)} connector(s) disabled.")
