"""PostgreSQL unreachable: every endpoint answers 503 with Retry-After and a JSON body; nothing leaks."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from tests.api.conftest import bearer, issue_key
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db(transaction=True)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nothing listens once the probe closes


@pytest.fixture
def database_down() -> Iterator[None]:
    """The real driver connecting to a port where no PostgreSQL listens (as after `pg0 stop`)."""
    saved = connection.settings_dict["PORT"]
    connection.close()
    connection.settings_dict["PORT"] = str(closed_port())
    yield
    connection.close()
    connection.settings_dict["PORT"] = saved


@pytest.fixture
def key() -> str:
    return issue_key(tenant=TenantFactory.create())


REQUESTS = [
    ("post", "/api/v1/search", {"query": "anything"}),
    ("post", "/api/v1/index", {"id": "d", "content": "text"}),
    ("get", "/api/v1/documents", None),
    ("get", "/api/v1/documents/d", None),
    ("delete", "/api/v1/documents/d", None),
]


@pytest.mark.parametrize(("method", "path", "body"), REQUESTS, ids=[f"{m} {p}" for m, p, _ in REQUESTS])
def test_every_endpoint_answers_503_with_retry_after(
    key: str, database_down: None, method: str, path: str, body: object
) -> None:
    client = APIClient()
    response = getattr(client, method)(path, body, format="json", **bearer(key))
    assert response.status_code == 503
    assert response["Retry-After"].isdigit()
    assert response.json()["error"] == "service_unavailable"
    text = response.content.decode()
    assert connection.settings_dict["PORT"] not in text and "server running" not in text


def test_health_names_the_dependency_and_nothing_internal(database_down: None) -> None:
    response = APIClient().get("/api/v1/health")
    assert response.status_code == 503 and response["Retry-After"].isdigit()
    assert response.json() == {
        "status": "unavailable",
        "checks": {"postgres": "unavailable", "backend": "unknown"},
    }


def test_admin_pages_answer_503_not_a_traceback(database_down: None) -> None:
    client = Client(raise_request_exception=False)
    response = client.post("/admin/login/", {"username": "admin", "password": "pw-123456"})
    assert response.status_code == 503 and "Temporarily unavailable" in response.content.decode()


def test_service_comes_back_when_the_database_does(key: str) -> None:
    assert APIClient().get("/api/v1/documents", **bearer(key)).status_code == 200
