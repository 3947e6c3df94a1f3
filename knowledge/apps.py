"""App configuration for the knowledge app."""

from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "knowledge"
    verbose_name = "Knowledge base"

    def ready(self) -> None:
        from django.core import checks

        from knowledge.checks import check_pipeline_plugins, check_pipeline_stages

        checks.register(check_pipeline_plugins, "knowledge")
        checks.register(check_pipeline_stages, "knowledge")
