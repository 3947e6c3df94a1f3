"""Routes of the v1 API."""

from django.urls import path, register_converter

from knowledge.api import jobs, views


class ExternalIdConverter:
    """Any non-empty text, slashes and newlines included (`<path:>` stops at a newline); ids are opaque."""

    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(ExternalIdConverter, "external_id")

urlpatterns = [
    path("search", views.SearchView.as_view(), name="api-search"),
    path("index", views.IndexView.as_view(), name="api-index"),
    path("index/batch", jobs.IndexBatchView.as_view(), name="api-index-batch"),
    path("jobs/<int:job_id>", jobs.JobView.as_view(), name="api-job"),
    path("documents", views.DocumentListView.as_view(), name="api-documents"),
    path("documents/<external_id:external_id>", views.DocumentDetailView.as_view(), name="api-document"),
    path("health", views.HealthView.as_view(), name="api-health"),
]
