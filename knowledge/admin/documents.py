"""Document admin: content edits re-chunk, ACL edits become overrides, deletes use the services."""

from __future__ import annotations

import logging
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from knowledge.admin.audit import document_viewers_context
from knowledge.admin.base import ServiceDeleteAdmin, actor, limit_choices
from knowledge.admin.panels import visibility_panel_context
from knowledge.admin.policies import policy_text
from knowledge.models import Chunk, Document, DocumentPolicy, Environment, Principal
from knowledge.pipeline.embedders.base import EmbedderError
from knowledge.services.audit import access_change_record, access_snapshot
from knowledge.services.documents import (
    document_clear_acl_override,
    document_hard_delete,
    document_restore,
    document_set_acl,
    document_soft_delete,
)
from knowledge.services.edits import CONTENT_FIELDS, document_admin_create, document_admin_update
from knowledge.services.writes.validate import text_search_languages


class DocumentForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = Document
        fields = [
            *("connector", "external_id", "title", "source_url", "content", "metadata", "language"),
            *("environment", "is_public", "allowed_principals"),
        ]

    def clean_metadata(self) -> Any:
        metadata = self.cleaned_data.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise forms.ValidationError('Must be a JSON object, like {"team": "hr"}.')
        return metadata

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        connector = data.get("connector") or getattr(self.instance, "connector", None)
        principals = data.get("allowed_principals") or []
        if connector is not None:
            foreign = [str(p) for p in principals if p.tenant_id != connector.tenant_id]
            if foreign:
                self.add_error("allowed_principals", f"These belong to another tenant: {', '.join(foreign)}")
            environment = data.get("environment")
            if environment is not None and environment.tenant_id != connector.tenant_id:
                self.add_error("environment", "The environment belongs to another tenant.")
            if self.instance.pk is None and connector.pulls:
                self.add_error(
                    "connector", "Documents of a pull connector come from its source; use an api connector."
                )
        language = data.get("language")
        if language and language not in text_search_languages():
            self.add_error("language", f"PostgreSQL has no text-search configuration {language!r}.")
        return data


class ChunkInline(admin.TabularInline):  # type: ignore[type-arg]
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


def acl_text(is_public: bool, principals: list[Principal]) -> str:
    names = [str(p) for p in sorted(principals, key=str)]
    return ", ".join((["everyone in the tenant"] if is_public else []) + names) or "nobody (private)"


logger = logging.getLogger(__name__)
NOT_SAVED = (
    "Nothing was saved: the embedding service failed ({problem}). Try again in a moment; the server "
    "log has the details. To hide the document from search meanwhile, use the 'Soft-delete' action."
)


@admin.register(Document)
class DocumentAdmin(ServiceDeleteAdmin):
    form = DocumentForm
    list_display = [
        "__str__",
        "external_id",
        "tenant",
        "connector",
        "environment",
        "acl_source",
        "deleted_at",
    ]
    list_filter = ["tenant", "connector", "environment", "is_public", DeletedFilter]
    search_fields = ["title", "external_id", "source_url"]
    filter_horizontal = ["allowed_principals"]
    inlines = [ChunkInline]
    actions = ["soft_delete", "restore", "clear_acl_override"]
    STATE = (
        "content_hash",
        "acl_source",
        "source_acl",
        "deleted_at",
        "deletion_origin",
        "admin_policy",
        "index_sync",
        "created_at",
        "updated_at",
    )

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: Any = None,
    ) -> HttpResponse:
        # A save embeds the new chunks; when the embedding API fails the transaction rolls back whole,
        # and the admin says so instead of a server error.
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except EmbedderError as exc:
            logger.warning("admin save of document %s failed in the embedder: %s", object_id or "(new)", exc)
            problem = "it rejected the request" if exc.permanent else "it is unavailable"
            self.message_user(request, NOT_SAVED.format(problem=problem), messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        # The "Who can see this?" panel (templates/admin/knowledge/document/change_form.html).
        panel = visibility_panel_context(request=request, object_id=object_id)
        viewers = document_viewers_context(request=request, object_id=object_id)
        context = {**(extra_context or {}), **panel, **viewers}
        return super().change_view(request, object_id, form_url, context)

    def get_readonly_fields(self, request: HttpRequest, obj: Document | None = None) -> list[str]:
        if obj is None:
            return []
        locked = ["tenant", "connector", "external_id", *self.STATE]
        return locked + (list(CONTENT_FIELDS) if obj.connector.pulls else [])

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        editable = list(DocumentForm.Meta.fields)
        return editable if obj is None else ["tenant", *editable, *self.STATE]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        if obj is not None:
            note = "An edit here is an admin override: later syncs and pushes keep it until cleared."
            limit_choices(form, "allowed_principals", Principal.objects.filter(tenant_id=obj.tenant_id), note)
            limit_choices(form, "environment", Environment.objects.filter(tenant_id=obj.tenant_id))
        return form

    @admin.display(description="ACL source")
    def acl_source(self, obj: Document) -> str:
        if obj.acl_overridden:
            return f"admin override ({obj.acl_override_by or 'admin'}, {obj.acl_override_at:%Y-%m-%d %H:%M})"
        return str(Document.AclOrigin(obj.acl_origin).label)

    @admin.display(description="Index sync")
    def index_sync(self, obj: Document) -> str:
        state = f"version {obj.index_version}, pushed {obj.synced_version}"
        if not obj.index_dirty:
            return f"in sync ({state})"
        error = f"; last error ({obj.sync_attempts} attempts): {obj.sync_error}" if obj.sync_error else ""
        return f"waiting to be pushed ({state}){error}"

    @admin.display(description="Admin policy (kept by source id)")
    def admin_policy(self, obj: Document) -> str:
        policy = DocumentPolicy.objects.filter(
            connector_id=obj.connector_id, external_id=obj.external_id
        ).first()
        if policy is None:
            return "none"
        return f"{policy_text(policy)}; it outlives prunes and applies again when the source brings this back"

    @admin.display(description="Source ACL")
    def source_acl(self, obj: Document) -> str:
        return acl_text(obj.source_is_public, list(obj.source_principals.all()))

    def save_model(self, request: HttpRequest, obj: Document, form: Any, change: bool) -> None:
        data = form.cleaned_data
        if not change:
            values = {name: data.get(name) for name in (*CONTENT_FIELDS, "is_public")}
            created = document_admin_create(
                connector=data["connector"],
                external_id=data["external_id"],
                values=values,
                principals=list(data.get("allowed_principals") or []),
            )
            obj.pk, obj.tenant_id = created.pk, created.tenant_id
            return
        edited = {name: data[name] for name in CONTENT_FIELDS if name in form.changed_data}
        if edited:
            document_admin_update(document=obj, values=edited)
        if {"is_public", "allowed_principals"} & set(form.changed_data):
            principals = list(data.get("allowed_principals") or [])
            before = access_snapshot(Document.objects.get(pk=obj.pk))
            document_set_acl(
                document=obj, is_public=data["is_public"], principals=principals, actor=actor(request)
            )
            access_change_record(user=actor(request), document=obj, action="acl_override", before=before)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        # The ACL was written by the service in save_model; the form's own m2m save would bypass it.
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)

    def delete_one(self, request: HttpRequest, obj: Document) -> str:
        document_hard_delete(document_id=obj.pk)
        if obj.connector.pulls:
            return f"{obj}: deleted; the next sync restores it while its source has it (soft-delete hides)."
        return ""

    @admin.action(description="Soft-delete selected documents (hide from search; syncs keep them hidden)")
    def soft_delete(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        for document in queryset.order_by("pk"):
            before = access_snapshot(document)
            document_soft_delete(document=document, actor=actor(request))
            access_change_record(user=actor(request), document=document, action="soft_delete", before=before)
        self.message_user(request, f"{queryset.count()} document(s) hidden from search.", messages.SUCCESS)

    @admin.action(description="Restore selected documents")
    def restore(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        for document in queryset.order_by("pk"):
            before = access_snapshot(document)
            document_restore(document=document)
            access_change_record(user=actor(request), document=document, action="restore", before=before)
        self.message_user(request, f"{queryset.count()} document(s) restored.", messages.SUCCESS)

    @admin.action(description="Clear the ACL override (use the source's ACL again)")
    def clear_acl_override(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        overridden = queryset.filter(acl_override_at__isnull=False).order_by("pk")
        count = 0
        for document in overridden:
            before = access_snapshot(document)
            document_clear_acl_override(document=document)
            access_change_record(
                user=actor(request), document=document, action="clear_acl_override", before=before
            )
            count += 1
        self.message_user(request, f"{count} document(s) use their source's ACL again.", messages.SUCCESS)
