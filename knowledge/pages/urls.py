"""Routes of the staff pages (all behind the admin login)."""

from django.urls import path

from knowledge.pages import views

app_name = "pages"
urlpatterns = [
    path("playground/", views.playground, name="playground"),
    path("evals/", views.eval_reports, name="eval-reports"),
    path("evals/<str:name>/", views.eval_report, name="eval-report"),
    path("evals/<str:name>/chart.png", views.eval_chart, name="eval-chart"),
]
