"""Input never yields a 5xx: stage options and dates are bounded, and an OpenSearch lane that cannot
answer (node down, an error answer) or a search whose every lane timed out is a 503 with Retry-After,
details in the log only."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from knowledge.models import Tenant
from knowledge.services.documents import document_upsert
from retrieval_backends.registry import reset_backend
from tests.api.conftest import assert_error
from tests.api.test_outages import closed_port
from tests.factories import ConnectorFactory
from tests.opensearch import backend_config, node_or_skip, settle

pytestmark = pytest.mark.django_db


def search(api: APIClient, **body: Any) -> Any:
    return api.post("/api/v1/search", {"query": "ferry timetable", **body}, format="json")


@pytest.fixture
def dated(tenant: Tenant) -> None:
    connector = ConnectorFactory.create(tenant=tenant, name="dated")
    stamps = {
        "good": "2024-02-28T00:00:00",
        "feb30": "2024-02-30T00:00:00",
        "offset": "2024-01-01T00:00:00+99:00",
        "min": "0001-01-01T00:00:00+23:00",
    }
    for external_id, stamp in stamps.items():
        document_upsert(
            connector=connector,
            external_id=external_id,
            content=f"ferry timetable {external_id}",
            metadata={"t": stamp},
            is_public=True,
        )


@pytest.mark.parametrize(
    "half_life", ["99999999999 00:00:00", "0 00:00:00", "-1 00:00:00", "36501 00:00:00", "nonsense"]
)
def test_a_half_life_out_of_bounds_is_a_400(api: APIClient, half_life: str) -> None:
    response = search(api, stages=[{"name": "decay", "options": {"half_life": half_life}}])
    body = assert_error(response, 400, "stages.decay")
    assert "half_life must be a duration from 1 second to 36500 days" in body["message"]


def test_dates_that_do_not_exist_count_as_missing(api: APIClient, dated: None) -> None:
    kept = search(api, stages=[{"name": "decay", "options": {"field": "metadata.t"}}], top_k=10)
    assert kept.status_code == 200, kept.content
    assert {r["document_id"] for r in kept.json()["results"]} == {"good", "feb30", "offset", "min"}
    drop = {"field": "metadata.t", "missing": "drop", "half_life": "36500 00:00:00"}
    dropped = search(api, stages=[{"name": "decay", "options": drop}], top_k=10)
    assert dropped.status_code == 200, dropped.content
    assert {r["document_id"] for r in dropped.json()["results"]} == {"good", "min"}


def test_a_search_whose_every_lane_timed_out_is_a_503(api: APIClient, tenant: Tenant) -> None:
    document_upsert(
        connector=ConnectorFactory.create(tenant=tenant), external_id="a", content="ferry", is_public=True
    )
    backend = "tests.knowledge.fake_backends.SlowLanesBackend"
    with override_settings(RETRIEVAL_BACKEND=backend):
        reset_backend()
        response = search(api)
    reset_backend()
    assert_error(response, 503)
    assert response["Retry-After"].isdigit()


@pytest.mark.opensearch
def test_an_opensearch_node_that_is_down_is_a_503_with_details_only_in_the_log(
    api: APIClient, tenant: Tenant, caplog: pytest.LogCaptureFixture
) -> None:
    port = closed_port()
    config = backend_config(f"test-{uuid.uuid4().hex[:10]}", url=f"http://127.0.0.1:{port}")
    with override_settings(RETRIEVAL_BACKEND=config), caplog.at_level(logging.WARNING):
        reset_backend()
        connector = ConnectorFactory.create(tenant=tenant)
        document_upsert(connector=connector, external_id="a", content="ferry timetable", is_public=True)
        response = search(api)
    reset_backend()
    body = assert_error(response, 503)
    assert response["Retry-After"].isdigit() and body["error"] == "service_unavailable"
    assert str(port) not in response.content.decode()
    assert any(str(port) in r.getMessage() or str(port) in str(r.exc_info) for r in caplog.records)


@pytest.mark.opensearch
def test_an_opensearch_error_answer_is_a_503(api: APIClient, tenant: Tenant) -> None:
    node_or_skip()
    prefix = f"test-{uuid.uuid4().hex[:10]}"
    with override_settings(RETRIEVAL_BACKEND=backend_config(prefix)):
        reset_backend()
        from retrieval_backends.registry import get_backend

        backend = get_backend()
        connector = ConnectorFactory.create(tenant=tenant)
        document_upsert(connector=connector, external_id="a", content="ferry timetable", is_public=True)
        settle()
        # An index under the vectors' name whose "vector" is no knn field: the node answers 400.
        client = backend.client  # type: ignore[attr-defined]
        client.indices.delete(index=f"{prefix}-vectors-*", ignore=404)
        client.indices.create(
            index=f"{prefix}-vectors-384", body={"mappings": {"properties": {"vector": {"type": "keyword"}}}}
        )
        try:
            response = search(api, embedding=[0.1] * 384)
        finally:
            client.indices.delete(index=f"{prefix}-*", ignore=404)
    reset_backend()
    assert_error(response, 503)
    assert "knn" not in response.content.decode().lower()
