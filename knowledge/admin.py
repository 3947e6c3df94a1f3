"""Django admin: staff curate tenants, environments, connectors, principals, documents and chunks."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.timezone import now

from knowledge.models import (
    ApiKey,
    Chunk,
    ChunkEmbedding,
    Connector,
    Document,
    Environment,
    Principal,
    Tenant,
)
from knowledge.pages.panels import visibility_panel_context
from knowledge.services.access import document_access_sync
from knowledge.services.documents import document_restore, document_soft_delete


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]


@admin.register(Environment)
class EnvironmentAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "tenant"]
    list_filter = ["tenant"]
    search_fields = ["slug", "name"]


@admin.register(Connector)
class ConnectorAdmin(admin.ModelAdmin):
    list_display = ["name", "tenant", "kind", "environment", "enabled", "last_sync_status", "last_synced_at"]
    list_filter = ["tenant", "kind", "enabled", "last_sync_status"]
    search_fields = ["name"]
    readonly_fields = ["last_sync_status", "last_synced_at", "last_sync_error_count", "last_sync_error"]
    actions = ["enable", "disable", "sync_now"]

    @admin.action(description="Sync selected connectors now (on a Celery worker)")
    def sync_now(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        from knowledge.tasks import sync_connector

        pull = queryset.exclude(kind=Connector.Kind.API)
        for connector in pull:
            sync_connector.delay(connector.pk)
        self.message_user(request, f"{pull.count()} connector sync(s) queued.")

    @admin.action(description="Enable selected connectors")
    def enable(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        self.message_user(request, f"{queryset.update(enabled=True)} connector(s) enabled.")

    @admin.action(description="Disable selected connectors")
    def disable(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        self.message_user(request, f"{queryset.update(enabled=False)} connector(s) disabled.")


@admin.register(Principal)
class PrincipalAdmin(admin.ModelAdmin):
    list_display = ["external_id", "kind", "display_name", "tenant"]
    list_filter = ["tenant", "kind"]
    search_fields = ["external_id", "display_name"]
    filter_horizontal = ["groups"]


class ChunkInline(admin.TabularInline):
    model = Chunk
    fields = ("chunk_index", "parent_index", "token_count", "content", "acl_tokens", "is_deleted")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class DeletedFilter(admin.SimpleListFilter):
    title = "deleted"
    parameter_name = "deleted"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("no", "Live"), ("yes", "Soft-deleted")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Document]) -> QuerySet[Document]:
        if self.value() == "yes":
            return queryset.filter(deleted_at__isnull=False)
        if self.value() == "no":
            return queryset.filter(deleted_at__isnull=True)
        return queryset


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["__str__", "external_id", "tenant", "connector", "environment", "is_public", "deleted_at"]
    list_filter = ["tenant", "connector", "environment", "is_public", DeletedFilter]
    search_fields = ["title", "external_id", "source_url"]
    filter_horizontal = ["allowed_principals"]
    readonly_fields = ["content_hash", "deleted_at", "created_at", "updated_at"]
    inlines = [ChunkInline]
    actions = ["soft_delete", "restore"]

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        # The "Who can see this?" panel (templates/admin/knowledge/document/change_form.html).
        panel = visibility_panel_context(request=request, object_id=object_id)
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **panel})

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        # ACL principals are saved with the form's m2m data; push them (and the environment) to the chunks.
        document_access_sync(document=form.instance)

    @admin.action(description="Soft-delete selected documents (hide from search)")
    def soft_delete(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        for document in queryset:
            document_soft_delete(document=document)
        self.message_user(request, f"{queryset.count()} document(s) hidden from search.", messages.SUCCESS)

    @admin.action(description="Restore selected documents")
    def restore(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        for document in queryset:
            document_restore(document=document)
        self.message_user(request, f"{queryset.count()} document(s) restored.", messages.SUCCESS)


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = ["__str__", "document", "chunk_index", "tenant", "token_count", "is_deleted"]
    list_filter = ["tenant", "is_deleted", "language"]
    search_fields = ["content"]
    readonly_fields = [f.name for f in Chunk._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ChunkEmbedding)
class ChunkEmbeddingAdmin(admin.ModelAdmin):
    list_display = ["chunk", "model", "dimensions", "tenant", "is_deleted", "created_at"]
    list_filter = ["model", "dimensions", "tenant"]
    exclude = ["embedding"]
    readonly_fields = [
        "chunk",
        "model",
        "dimensions",
        "tenant",
        "connector",
        "environment",
        "is_deleted",
        "acl_tokens",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "tenant",
        "scopes",
        "principal",
        "on_behalf_of",
        "bypass_acl",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["tenant", "on_behalf_of", "bypass_acl"]
    search_fields = ["name", "lookup_id"]
    readonly_fields = ["lookup_id", "created_at", "last_used_at"]
    actions = ["revoke"]

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        plain = None if change else obj.set_new_secret()
        super().save_model(request, obj, form, change)
        if plain:
            self.message_user(request, f"API key (shown once, copy it now): {plain}", messages.WARNING)

    @admin.action(description="Revoke selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        self.message_user(
            request, f"{queryset.filter(revoked_at__isnull=True).update(revoked_at=now())} key(s) revoked."
        )
