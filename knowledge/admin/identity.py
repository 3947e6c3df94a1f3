"""Tenants, environments, principals and API keys: a tenant is fixed once set; deletes use services."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from knowledge.admin.base import ServiceDeleteAdmin, limit_choices
from knowledge.errors import Conflict
from knowledge.models import ApiKey, Environment, Principal, Tenant
from knowledge.services.api_keys import api_key_rotate, api_keys_revoke
from knowledge.services.deletion import principal_delete, tenant_delete


class FixedTenantMixin:
    """The tenant field is read-only once the object exists (tenancy never changes)."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        own = list(getattr(self, "readonly_fields", ()))
        return (["tenant"] if obj is not None else []) + own


@admin.register(Tenant)
class TenantAdmin(ServiceDeleteAdmin):
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]

    def delete_one(self, request: HttpRequest, obj: Tenant) -> str:
        count = tenant_delete(tenant=obj)
        return f"tenant {obj.slug}: deleted with its {count} document(s)."


@admin.register(Environment)
class EnvironmentAdmin(FixedTenantMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["slug", "name", "tenant"]
    list_filter = ["tenant"]
    search_fields = ["slug", "name"]


@admin.register(Principal)
class PrincipalAdmin(FixedTenantMixin, ServiceDeleteAdmin):
    list_display = ["external_id", "kind", "display_name", "tenant"]
    list_filter = ["tenant", "kind"]
    search_fields = ["external_id", "display_name"]
    filter_horizontal = ["groups"]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        if obj is not None:
            groups = Principal.objects.filter(tenant_id=obj.tenant_id, kind=Principal.Kind.GROUP)
            limit_choices(form, "groups", groups.exclude(pk=obj.pk))
        return form

    def delete_one(self, request: HttpRequest, obj: Principal) -> str:
        count = principal_delete(principal=obj)
        return f"{obj}: deleted; {count} document(s) no longer grant it access."


@admin.register(ApiKey)
class ApiKeyAdmin(FixedTenantMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = [
        "name",
        "tenant",
        "scopes",
        "principal",
        "on_behalf_of",
        "bypass_acl",
        "last_used_at",
        "expires_at",
        "revoked_at",
    ]
    list_filter = ["tenant", "on_behalf_of", "bypass_acl"]
    search_fields = ["name", "lookup_id"]
    readonly_fields = ["lookup_id", "created_at", "last_used_at", "previous_valid_until"]
    actions = ["revoke", "rotate"]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        if obj is not None:
            limit_choices(form, "principal", Principal.objects.filter(tenant_id=obj.tenant_id, kind="user"))
        return form

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        plain = None if change else obj.set_new_secret()
        super().save_model(request, obj, form, change)
        if plain:
            self.message_user(request, f"API key (shown once, copy it now): {plain}", messages.WARNING)

    @admin.action(description="Revoke selected keys", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        count = api_keys_revoke(key_ids=queryset.values_list("pk", flat=True))
        self.message_user(request, f"{count} key(s) revoked.")

    @admin.action(
        description="Rotate the secret of selected keys (the old one works 24 more hours)",
        permissions=["change"],
    )
    def rotate(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        for key in queryset:
            try:
                plain = api_key_rotate(key_id=key.pk)
            except Conflict as exc:
                self.message_user(request, exc.message, messages.ERROR)
                continue
            self.message_user(
                request,
                f"{key}: new secret (shown once, copy it now; the old one works for 24 hours): {plain}",
                messages.WARNING,
            )
