"""Connector admin: sync now, a default ACL that reaches its documents, deletes through the services."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.humanize.templatetags.humanize import naturaltime
from django.db.models import QuerySet
from django.http import HttpRequest

from knowledge import credentials
from knowledge.admin.base import ServiceDeleteAdmin, limit_choices
from knowledge.connectors.registry import connector_kind, kind_names
from knowledge.models import Connector, Principal, SyncRun
from knowledge.selectors.drift import connectors_with_drift
from knowledge.services.connectors import connector_apply_default_acl
from knowledge.services.deletion import connector_delete, connector_purge_run
from knowledge.services.enqueue import PURGE_CONNECTOR, SYNC_CONNECTOR, SYNC_PERMISSIONS, send_task


class ConnectorForm(forms.ModelForm):  # type: ignore[type-arg]
    credential = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored encrypted; never shown again. Leave blank to keep the current one.",
    )
    clear_credential = forms.BooleanField(required=False, label="Remove the stored credential")

    class Meta:
        model = Connector
        fields = [
            *("tenant", "name", "kind", "config", "credential", "clear_credential", "environment"),
            *(
                "default_is_public",
                "default_principals",
                "enabled",
                "sync_interval",
                "permission_sync_interval",
            ),
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["credential"]
        kind = getattr(self.instance, "kind", "")
        label = connector_kind(kind).credential_label if kind in kind_names() else ""
        if label:
            field.label = label
        if self.instance.pk and self.instance.credential_sealed:
            field.help_text = f"Set ({_masked(self.instance)}); stored encrypted. Leave blank to keep it."
        if self.instance.pk and not self.instance.credential_sealed and not label:
            del self.fields["credential"], self.fields["clear_credential"]  # this kind takes none
        if "permission_sync_interval" in self.fields:  # blank keeps the model's default
            self.fields["permission_sync_interval"].required = False

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if "permission_sync_interval" in self.fields and not data.get("permission_sync_interval"):
            data["permission_sync_interval"] = self.instance.permission_sync_interval  # the model default
        kind = data.get("kind") or getattr(self.instance, "kind", "")
        if data.get("credential") and kind in kind_names() and not connector_kind(kind).credential_label:
            self.add_error("credential", f"A {kind} connector takes no credential.")
        tenant = data.get("tenant") or getattr(self.instance, "tenant", None)
        foreign = [
            str(p) for p in data.get("default_principals") or [] if tenant and p.tenant_id != tenant.pk
        ]
        if foreign:
            self.add_error("default_principals", f"These belong to another tenant: {', '.join(foreign)}")
        return data

    def save(self, commit: bool = True) -> Connector:
        if self.cleaned_data.get("clear_credential"):
            self.instance.set_credential("")
        elif self.cleaned_data.get("credential"):
            self.instance.set_credential(self.cleaned_data["credential"])
        return super().save(commit)


def _masked(connector: Connector) -> str:
    try:
        return credentials.masked(connector.credential())
    except credentials.CredentialUnreadable:
        return "unreadable with the current keys: enter it again"


RUN_FIELDS = (
    "kind",
    "status",
    "started_at",
    "finished_at",
    "added",
    "updated",
    "unchanged",
    "deleted",
    "errors",
    "processed",
    "total",
    "error_text",
)


class SyncRunInline(admin.TabularInline):  # type: ignore[type-arg]
    model = SyncRun
    fields = RUN_FIELDS
    readonly_fields = RUN_FIELDS
    extra = 0
    max_num = 0
    can_delete = False
    ordering = ["-started_at", "-pk"]
    verbose_name_plural = "Runs (newest first)"

    def get_queryset(self, request: HttpRequest) -> QuerySet[SyncRun]:
        return super().get_queryset(request).order_by("-started_at", "-pk")


@admin.register(Connector)
class ConnectorAdmin(ServiceDeleteAdmin):
    form = ConnectorForm
    inlines = [SyncRunInline]
    list_display = [
        *("name", "tenant", "kind", "environment", "enabled", "last_sync_status", "last_synced_at"),
        "index_drift",
    ]
    list_filter = ["tenant", "kind", "enabled", "last_sync_status"]
    search_fields = ["name"]
    filter_horizontal = ["default_principals"]
    readonly_fields = [
        *("last_sync_status", "last_synced_at", "last_sync_error_count", "last_sync_error"),
        "permissions_synced_at",
    ]
    actions = ["enable", "disable", "sync_now", "sync_permissions_now", "full_resync", "purge_documents"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Connector]:
        return connectors_with_drift(super().get_queryset(request))

    @admin.display(description="Index drift")
    def index_drift(self, obj: Connector) -> str:
        dirty, tombstones = getattr(obj, "dirty", 0), getattr(obj, "tombstones", 0)
        if not dirty and not tombstones:
            return "in sync"
        oldest = getattr(obj, "oldest_dirty", None)
        age = f", oldest {naturaltime(oldest)}" if oldest else ""
        return f"{dirty} dirty, {tombstones} deletions pending{age}"

    def get_readonly_fields(self, request: HttpRequest, obj: Connector | None = None) -> list[str]:
        fixed = ["tenant", "kind"] if obj is not None else []  # a connector never changes tenant
        return [*fixed, *self.readonly_fields]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_fields(request, obj))
        if obj is None or obj.kind not in kind_names():
            return fields
        kind = connector_kind(obj.kind)
        if not kind.syncs_permissions:
            fields.remove("permission_sync_interval")  # a kind that reads no permissions has no such sync
        if not kind.credential_label and not obj.credential_sealed:
            fields = [f for f in fields if f not in ("credential", "clear_credential")]
        return fields

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

    def _queue(self, request: HttpRequest, queryset: QuerySet[Connector], full: bool) -> None:
        disabled = [str(c) for c in queryset if c.pulls and not c.enabled]
        if disabled:
            self.message_user(
                request, f"Not synced, disabled (enable them first): {', '.join(disabled)}.", messages.WARNING
            )
        pushed = [str(c) for c in queryset if not c.pulls]
        if pushed:
            self.message_user(
                request,
                f"Nothing to sync for {', '.join(pushed)}: documents arrive through the API, not a sync.",
                messages.WARNING,
            )
        pull = [c for c in queryset if c.pulls and c.enabled]
        sent = sum(send_task(SYNC_CONNECTOR, c.pk, full) for c in pull)
        if pull:
            self.message_user(request, f"{sent} of {len(pull)} pull connector sync(s) queued.")
        if sent < len(pull):
            self.message_user(request, "The task queue is unavailable; try again shortly.", messages.ERROR)

    @admin.action(description="Sync selected connectors now (on a Celery worker)")
    def sync_now(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        self._queue(request, queryset, full=False)

    @admin.action(description="Sync permissions and groups now (kinds that can: GitHub, Slack)")
    def sync_permissions_now(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        able = [
            c
            for c in queryset
            if c.enabled and c.kind in kind_names() and connector_kind(c.kind).syncs_permissions
        ]
        skipped = [str(c) for c in queryset if c not in able]
        if skipped:
            self.message_user(
                request,
                f"No permission sync for {', '.join(skipped)} (disabled, or its kind has none).",
                messages.WARNING,
            )
        sent = sum(send_task(SYNC_PERMISSIONS, c.pk) for c in able)
        if able:
            self.message_user(request, f"{sent} of {len(able)} permission sync(s) queued.")
        if sent < len(able):
            self.message_user(request, "The task queue is unavailable; try again shortly.", messages.ERROR)

    @admin.action(description="Full resync: re-list the source and re-push every document to the index")
    def full_resync(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        self._queue(request, queryset, full=True)

    @admin.action(description="Purge documents (delete every document of the connector, in batches)")
    def purge_documents(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        for connector in queryset:
            run = SyncRun.objects.create(connector=connector, kind=SyncRun.Kind.PURGE)
            if not send_task(PURGE_CONNECTOR, connector.pk, run.pk):
                connector_purge_run(connector_id=connector.pk, run_id=run.pk)  # no broker: do it here
        self.message_user(
            request, f"{queryset.count()} purge(s) started; progress is in each connector's runs."
        )

    @admin.action(description="Enable selected connectors")
    def enable(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        self.message_user(request, f"{queryset.update(enabled=True)} connector(s) enabled.")

    @admin.action(description="Disable selected connectors")
    def disable(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        self.message_user(request, f"{queryset.update(enabled=False)} connector(s) disabled.")
