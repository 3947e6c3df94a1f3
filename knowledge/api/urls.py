"""Routes of the v1 API."""

from django.urls import path

from knowledge.api import views

urlpatterns = [
    path("search", views.SearchView.as_view(), name="api-search"),
    path("index", views.IndexView.as_view(), name="api-index"),
    path("documents", views.DocumentListView.as_view(), name="api-documents"),
    path("documents/<path:external_id>", views.DocumentDetailView.as_view(), name="api-document"),
    path("health", views.HealthView.as_view(), name="api-health"),
]
