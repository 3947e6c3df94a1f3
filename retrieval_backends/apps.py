"""App configuration: registers the retrieval-backend system checks."""

from django.apps import AppConfig


class RetrievalBackendsConfig(AppConfig):
    name = "retrieval_backends"
    verbose_name = "Retrieval backends"

    def ready(self) -> None:
        from retrieval_backends import checks  # noqa: F401  (registers the checks)
