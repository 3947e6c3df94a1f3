"""Ingest jobs over the API: batches (JSON, NDJSON), big documents as jobs, progress, cancel, idempotency."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from knowledge.models import Chunk, Document, IngestJob, IngestJobItem, Principal, Tenant
from knowledge.services.jobs import job_run
from tests.api.conftest import ClientMaker, assert_error, post
from tests.factories import EnvironmentFactory, TenantFactory


def doc(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "id": f"doc-{n}",
        "title": f"Ferry {n}",
        "content": f"The harbour ferry leaves at {n} o'clock.",
        **extra,
    }


def get_job(api: APIClient, job_id: int) -> dict[str, Any]:
    response = api.get(f"/api/v1/jobs/{job_id}")
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def search_ids(api: APIClient, user: str) -> set[str]:
    response = post(api, "search", {"query": "harbour ferry", "on_behalf_of": user, "top_k": 50})
    assert response.status_code == 200, response.content
    return {hit["document_id"] for hit in response.json()["results"]}


def test_a_batch_is_a_job_that_writes_every_document(api: APIClient) -> None:
    response = post(api, "index/batch", [doc(i) for i in range(5)])
    assert response.status_code == 202, response.content
    body = response.json()
    assert response["Location"] == body["url"] == f"/api/v1/jobs/{body['id']}"
    assert body["state"] == "queued"
    assert body["documents"] == {"total": 5, "pending": 5, "done": 0, "failed": 0, "cancelled": 0}
    assert not Document.objects.exists()

    assert job_run(job_id=body["id"]).state == "succeeded"
    done = get_job(api, body["id"])
    assert done["state"] == "succeeded"
    assert done["documents"]["done"] == 5 and done["documents"]["pending"] == 0
    assert done["chunks"]["written"] == Chunk.objects.count() >= 5
    assert done["started_at"] and done["finished_at"] and done["seconds"] >= 0
    assert sorted(Document.objects.values_list("external_id", flat=True)) == [f"doc-{i}" for i in range(5)]
    assert not IngestJobItem.objects.exclude(payload=None).exists()  # bodies are dropped once written


def test_ndjson_batches_and_their_bad_lines(api: APIClient) -> None:
    lines = "\n".join(json.dumps(doc(i)) for i in range(3)) + "\n\n"
    response = api.post("/api/v1/index/batch", data=lines, content_type="application/x-ndjson")
    assert response.status_code == 202, response.content
    assert response.json()["documents"]["total"] == 3
    broken = api.post("/api/v1/index/batch", data='{"id": "a"}\n{nope', content_type="application/x-ndjson")
    body = assert_error(broken, 400)
    assert "line 2" in body["message"]


def test_an_invalid_document_refuses_the_whole_batch(api: APIClient) -> None:
    response = post(api, "index/batch", [doc(0), {"id": "doc-1"}, doc(2, colour="red")])
    body = assert_error(response, 400, field="1.content")
    assert "2.colour" in body["fields"]
    duplicate = post(api, "index/batch", [doc(0), doc(0)])
    assert_error(duplicate, 400, field="1.id")
    empties: list[object] = [[], {}, "text", {"documents": []}]
    for empty in empties:
        assert_error(post(api, "index/batch", empty), 400)
    assert not IngestJob.objects.exists()


def test_batch_limits(api: APIClient) -> None:
    with override_settings(KNOWLEDGE_BATCH_MAX_DOCUMENTS=2):
        assert_error(post(api, "index/batch", [doc(i) for i in range(3)]), 400, field="documents")
        assert post(api, "index/batch", {"documents": [doc(0), doc(1)]}).status_code == 202
    with override_settings(KNOWLEDGE_MAX_BATCH_BYTES=100):
        assert_error(post(api, "index/batch", [doc(i) for i in range(3)]), 413)


def test_a_search_only_key_cannot_submit_or_read_jobs(
    tenant: Tenant, make_client: ClientMaker, api: APIClient
) -> None:
    job_id = post(api, "index/batch", [doc(0)]).json()["id"]
    reader = make_client(tenant, scopes=("search",))
    assert_error(post(reader, "index/batch", [doc(0)]), 403)
    assert_error(reader.get(f"/api/v1/jobs/{job_id}"), 403)


def test_another_tenants_job_does_not_exist(api: APIClient, make_client: ClientMaker) -> None:
    job_id = post(api, "index/batch", [doc(0)]).json()["id"]
    stranger = make_client(TenantFactory.create(slug="globex"))
    assert_error(stranger.get(f"/api/v1/jobs/{job_id}"), 404)
    assert_error(stranger.delete(f"/api/v1/jobs/{job_id}"), 404)
    assert_error(stranger.get("/api/v1/jobs/99999999"), 404)
    assert IngestJob.objects.get(pk=job_id).state == "queued"


def test_big_documents_and_prefer_async_become_jobs(api: APIClient) -> None:
    with override_settings(KNOWLEDGE_INLINE_INDEX_CHARS=60):
        small = post(api, "index", doc(1))
        assert (small.status_code, small.json()) == (201, {"status": "indexed"})
        big = post(api, "index", doc(2, content="harbour ferry " * 10))
        assert big.status_code == 202, big.content
        assert not Document.objects.filter(external_id="doc-2").exists()
        assert job_run(job_id=big.json()["id"]).state == "succeeded"
        assert Document.objects.filter(external_id="doc-2").exists()
    asked = api.post("/api/v1/index", doc(3), format="json", HTTP_PREFER="respond-async")
    assert asked.status_code == 202 and asked.json()["documents"]["total"] == 1


def test_documents_the_write_would_refuse_are_refused_at_submission(api: APIClient) -> None:
    with override_settings(KNOWLEDGE_MAX_CONTENT_CHARS=50, KNOWLEDGE_INLINE_INDEX_CHARS=10):
        body = assert_error(post(api, "index", doc(1, content="x" * 60)), 413, field="content")
        assert "50" in body["message"]
        batch = assert_error(
            post(api, "index/batch", [doc(0), doc(1, content="x" * 60)]), 413, field="1.content"
        )
        assert "doc-1" in batch["message"]
    unknown = assert_error(
        post(api, "index/batch", [doc(0), doc(1, environment="nowhere")]), 400, "1.environment"
    )
    assert "nowhere" in unknown["message"]
    assert not IngestJob.objects.exists()


def test_a_caller_embedded_document_is_never_an_automatic_job(api: APIClient) -> None:
    with override_settings(KNOWLEDGE_INLINE_INDEX_CHARS=10):
        response = post(api, "index", doc(1, embedding=[0.6, 0.8, 0.0]))
    assert response.status_code == 201, response.content


def test_idempotency_key_replays_the_first_job(api: APIClient) -> None:
    headers = {"HTTP_IDEMPOTENCY_KEY": "import-2026-12-02"}
    first = api.post("/api/v1/index/batch", [doc(0), doc(1)], format="json", **headers)
    again = api.post("/api/v1/index/batch", [doc(0), doc(1)], format="json", **headers)
    assert first.status_code == again.status_code == 202
    assert first.json()["id"] == again.json()["id"]
    assert again["Idempotent-Replayed"] == "true" and not first.has_header("Idempotent-Replayed")
    other = api.post("/api/v1/index/batch", [doc(0)], format="json", **headers)
    assert_error(other, 409, field="Idempotency-Key")
    assert IngestJob.objects.count() == 1
    unkeyed = [post(api, "index/batch", [doc(0)]).json()["id"] for _ in range(2)]
    assert len(set(unkeyed)) == 2
    bad = api.post("/api/v1/index/batch", [doc(0)], format="json", HTTP_IDEMPOTENCY_KEY="x" * 256)
    assert_error(bad, 400, field="Idempotency-Key")


def test_the_same_key_in_another_tenant_is_another_job(api: APIClient, make_client: ClientMaker) -> None:
    stranger = make_client(TenantFactory.create(slug="globex"))
    ids = {
        client.post("/api/v1/index/batch", [doc(0)], format="json", HTTP_IDEMPOTENCY_KEY="k").json()["id"]
        for client in (api, stranger)
    }
    assert len(ids) == 2


@override_settings(KNOWLEDGE_JOB_SLICE_DOCUMENTS=1)
def test_cancel_stops_a_job_between_slices(api: APIClient) -> None:
    job_id = post(api, "index/batch", [doc(i) for i in range(4)]).json()["id"]
    assert job_run(job_id=job_id, seconds=0).out_of_time  # one slice written, then out of time
    cancelled = api.delete(f"/api/v1/jobs/{job_id}")
    assert cancelled.status_code == 200
    body = cancelled.json()
    assert body["state"] == "cancelled" and body["finished_at"]
    assert body["documents"] == {"total": 4, "pending": 0, "done": 1, "failed": 0, "cancelled": 3}
    assert job_run(job_id=job_id).state == "cancelled"
    assert list(Document.objects.values_list("external_id", flat=True)) == ["doc-0"]
    again = api.delete(f"/api/v1/jobs/{job_id}")  # cancelling a finished job changes nothing
    assert again.status_code == 200 and again.json()["documents"]["done"] == 1


def test_per_document_errors_at_write_time_leave_the_rest_written(tenant: Tenant, api: APIClient) -> None:
    """What a document needs can change after submission (its environment deleted, say)."""
    temporary = EnvironmentFactory.create(tenant=tenant, slug="launch")
    job_id = post(api, "index/batch", [doc(0), doc(1, environment="launch"), doc(2)]).json()["id"]
    temporary.delete()
    assert job_run(job_id=job_id).state == "partial"
    body = get_job(api, job_id)
    assert body["documents"]["done"] == 2 and body["documents"]["failed"] == 1
    [error] = body["errors"]
    assert error["position"] == 1 and error["id"] == "doc-1" and "launch" in error["message"]
    assert sorted(Document.objects.values_list("external_id", flat=True)) == ["doc-0", "doc-2"]


@override_settings(KNOWLEDGE_JOB_SLICE_DOCUMENTS=1)
def test_documents_are_searchable_as_they_land_under_their_own_acl(
    tenant: Tenant, admin_api: APIClient
) -> None:
    for user in ("alice@example.com", "bob@example.com"):
        Principal.objects.create(tenant=tenant, kind="user", external_id=user)
    docs = [
        doc(0, acl={"users": ["alice@example.com"]}),
        doc(1, acl={"public": True}),
        doc(2, acl={"users": ["bob@example.com"]}),
    ]
    job_id = post(admin_api, "index/batch", docs).json()["id"]
    seen: list[tuple[set[str], set[str]]] = []
    while job_run(job_id=job_id, seconds=0).out_of_time:
        seen.append((search_ids(admin_api, "alice@example.com"), search_ids(admin_api, "bob@example.com")))
    seen.append((search_ids(admin_api, "alice@example.com"), search_ids(admin_api, "bob@example.com")))
    assert seen == [
        ({"doc-0"}, set()),
        ({"doc-0", "doc-1"}, {"doc-1"}),
        ({"doc-0", "doc-1"}, {"doc-1", "doc-2"}),
    ]


def test_a_crash_mid_slice_loses_and_duplicates_nothing(
    api: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that dies after writing a slice's documents but before committing: the transaction
    rolls back documents and marks together, and the rerun writes each document once."""
    from knowledge.services.jobs import run

    job_id = post(api, "index/batch", [doc(i) for i in range(6)]).json()["id"]
    real_write = run._write

    def dies_after_writing(*args: Any) -> None:
        real_write(*args)
        raise SystemExit("worker killed")

    monkeypatch.setattr(run, "_write", dies_after_writing)
    with pytest.raises(SystemExit):
        job_run(job_id=job_id)
    assert not Document.objects.exists()
    assert IngestJobItem.objects.filter(job_id=job_id, state="pending").count() == 6
    monkeypatch.setattr(run, "_write", real_write)
    assert job_run(job_id=job_id).state == "succeeded"
    assert Document.objects.count() == 6
    assert (
        sum(IngestJobItem.objects.filter(job_id=job_id).values_list("chunks", flat=True))
        == Chunk.objects.count()
    )
