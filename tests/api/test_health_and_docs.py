"""GET /api/v1/health (no auth; 503 naming what failed) and the OpenAPI schema and Swagger UI."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError
from django.test import override_settings
from rest_framework.test import APIClient

from knowledge.selectors import health
from retrieval_backends.base import BackendUnavailable
from retrieval_backends.postgres import PostgresRetrievalBackend
from retrieval_backends.registry import reset_backend


class UnhealthyBackend(PostgresRetrievalBackend):
    def health(self) -> None:
        raise BackendUnavailable("search node unreachable")


def broken_ping() -> None:
    raise OperationalError("connection refused")


def test_health_needs_no_key(db: None) -> None:
    response = APIClient().get("/api/v1/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"postgres": "ok", "backend": "ok"}}


def test_health_ignores_a_bad_key(db: None) -> None:
    assert APIClient().get("/api/v1/health", HTTP_AUTHORIZATION="Bearer nope").status_code == 200


def test_failing_backend_is_503_naming_it(db: None) -> None:
    with override_settings(RETRIEVAL_BACKEND=f"{__name__}.UnhealthyBackend"):
        reset_backend()
        response = APIClient().get("/api/v1/health")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable" and body["checks"]["postgres"] == "ok"
    assert body["checks"]["backend"] == "unavailable"  # the reason goes to the log, not to the caller


def test_failing_database_is_503_naming_it(db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health, "database_ping", broken_ping)
    response = APIClient().get("/api/v1/health")
    assert response.status_code == 503
    assert response.json()["checks"]["postgres"] == "unavailable"


def _examples(operation: dict[str, Any]) -> list[str]:
    bodies = [operation.get("requestBody", {}), *operation["responses"].values()]
    return [name for b in bodies for c in b.get("content", {}).values() for name in c.get("examples", {})]


def test_schema_documents_every_endpoint_with_examples(db: None) -> None:
    response = APIClient().get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    operations = {(path, method) for path, item in schema["paths"].items() for method in item}
    assert operations == {
        ("/api/v1/search", "post"),
        ("/api/v1/index", "post"),
        ("/api/v1/documents", "get"),
        ("/api/v1/documents/{external_id}", "get"),
        ("/api/v1/documents/{external_id}", "delete"),
        ("/api/v1/health", "get"),
        ("/api/v1/index/batch", "post"),
        ("/api/v1/jobs/{job_id}", "get"),
        ("/api/v1/jobs/{job_id}", "delete"),
    }
    assert schema["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    for path, method in operations:
        assert _examples(schema["paths"][path][method]), (path, method)
    assert schema["paths"]["/api/v1/health"]["get"]["security"] == [{}]


def test_swagger_ui(db: None) -> None:
    response = APIClient().get("/api/docs/")
    assert response.status_code == 200
    assert b"swagger" in response.content.lower()


def test_unknown_api_urls_answer_json_404(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/api/v1/no-such-endpoint")
    assert response.status_code == 404
    assert response.json() == {"error": "not_found", "message": "no API endpoint at /api/v1/no-such-endpoint"}
    assert "text/html" in client.get("/no-such-page").headers["Content-Type"]
