"""Ingest jobs in the admin: progress, errors and timings; staff with the change permission may cancel."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from knowledge.admin.base import ReadOnlyAdmin
from knowledge.models import IngestJob, IngestJobItem
from knowledge.selectors.jobs import job_progress, job_seconds
from knowledge.services.jobs import job_cancel


@admin.register(IngestJob)
class IngestJobAdmin(ReadOnlyAdmin):
    list_display = ["id", "tenant", "state", "progress", "failed", "created_at", "duration"]
    list_filter = ["state", "tenant", "created_at"]
    date_hierarchy = "created_at"
    search_fields = ["idempotency_key", "items__external_id"]
    search_help_text = "An Idempotency-Key, or the id of a document in the job."
    actions = ["cancel"]
    fields = readonly_fields = (
        *("tenant", "connector", "api_key", "state", "progress", "errors", "idempotency_key"),
        *("created_at", "started_at", "finished_at", "duration"),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[IngestJob]:
        counted = {
            f"n_{state}": Count("items", filter=Q(items__state=state))
            for state in (IngestJobItem.State.DONE, IngestJobItem.State.FAILED, IngestJobItem.State.CANCELLED)
        }
        return (
            super().get_queryset(request).select_related("tenant", "connector", "api_key").annotate(**counted)
        )

    @admin.display(description="Progress")
    def progress(self, obj: IngestJob) -> SafeString:
        done, failed, cancelled = (getattr(obj, f"n_{state}", 0) for state in ("done", "failed", "cancelled"))
        return format_html(
            '<progress max="{}" value="{}"></progress> {} / {} written',
            obj.total_documents,
            done + failed + cancelled,
            done,
            obj.total_documents,
        )

    @admin.display(description="Failed")
    def failed(self, obj: IngestJob) -> int:
        return int(getattr(obj, "n_failed", 0))

    @admin.display(description="Errors (first 100)")
    def errors(self, obj: IngestJob) -> SafeString:
        rows = [(e["position"], e["id"], e["message"]) for e in job_progress(job=obj).errors]
        if not rows:
            return format_html("{}", "none")
        return format_html("<ul>{}</ul>", format_html_join("", "<li>#{} {}: {}</li>", rows))

    @admin.display(description="Seconds")
    def duration(self, obj: IngestJob) -> float | None:
        return job_seconds(obj)

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("knowledge.change_ingestjob"))  # type: ignore[union-attr]

    @admin.action(description="Cancel selected jobs (documents already written stay)", permissions=["cancel"])
    def cancel(self, request: HttpRequest, queryset: QuerySet[IngestJob]) -> None:
        cancelled = sum(job_cancel(job=job) for job in queryset)
        self.message_user(request, f"{cancelled} job(s) cancelled.")
