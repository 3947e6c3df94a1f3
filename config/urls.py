"""URL routes: the admin site and staff pages, the v1 REST API, and its OpenAPI schema and docs."""

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from knowledge.pages.views import favicon

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    # Browsers ask for /favicon.ico on pages without an icon link (the API docs, JSON responses).
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("", include("knowledge.pages.urls")),
    path("api/v1/", include("knowledge.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]

handler404 = "knowledge.api.errors.json_or_html_404"
handler500 = "knowledge.api.errors.json_or_html_500"
