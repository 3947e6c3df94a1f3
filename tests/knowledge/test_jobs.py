"""Ingest jobs below the API: admin pages by permission, queue routing, resume sweep, purge, inline pushes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from config.celery import app
from knowledge.models import Document, IngestJob, Tenant
from knowledge.services import enqueue
from knowledge.services.jobs import job_run, job_submit, jobs_purge, jobs_resume
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db


def submitted(tenant: Tenant, count: int = 2) -> IngestJob:
    documents = [
        {"id": f"d{i}", "content": f"harbour ferry {i}", "acl": {"public": True}} for i in range(count)
    ]
    return job_submit(tenant=tenant, documents=documents).job


def staff(*codenames: str) -> Client:
    name = f"clerk{get_user_model().objects.count()}"
    user = get_user_model().objects.create_user(name, password="pw-123456", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def test_the_job_pages_need_the_view_permission_and_cancel_needs_change() -> None:
    job = submitted(TenantFactory.create())
    changelist = reverse("admin:knowledge_ingestjob_changelist")
    page = reverse("admin:knowledge_ingestjob_change", args=[job.pk])
    nobody = staff()
    assert nobody.get(changelist).status_code == 403 and nobody.get(page).status_code == 403

    viewer = staff("view_ingestjob")
    listing = viewer.get(changelist)
    assert listing.status_code == 200 and b"<progress" in listing.content
    assert b'value="cancel"' not in listing.content  # no action offered without the change permission
    refused = viewer.post(changelist, {"action": "cancel", "_selected_action": [job.pk]})
    assert refused.status_code in (200, 302)
    assert IngestJob.objects.get(pk=job.pk).state == "queued"
    operator = staff("view_ingestjob", "change_ingestjob")
    assert b'value="cancel"' in operator.get(changelist).content
    operator.post(changelist, {"action": "cancel", "_selected_action": [job.pk]})
    assert IngestJob.objects.get(pk=job.pk).state == "cancelled"


def test_the_job_page_shows_progress_and_errors() -> None:
    job = submitted(TenantFactory.create(), count=3)
    job_run(job_id=job.pk)
    client = staff("view_ingestjob")
    page = client.get(reverse("admin:knowledge_ingestjob_change", args=[job.pk]))
    assert page.status_code == 200
    assert b"3 / 3 written" in page.content and b"Succeeded" in page.content


def test_bulk_work_and_urgent_work_go_to_different_queues() -> None:
    def queue(name: str) -> str:
        route: dict[str, Any] = app.amqp.router.route({}, name)
        return str(route["queue"].name)

    assert queue("knowledge.tasks.run_ingest_job") == queue("knowledge.tasks.sync_connector") == "bulk"
    for urgent in (
        "sync_documents_to_index",
        "reconcile_index",
        "purge_connector",
        "resume_ingest_jobs",
        "ping",
    ):
        assert queue(f"knowledge.tasks.{urgent}") == "priority", urgent


def test_the_resume_sweep_wakes_only_stale_unfinished_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[Any, ...]] = []
    monkeypatch.setattr(enqueue, "send_task", lambda name, *args, expires=None: sent.append((name, *args)))
    monkeypatch.setattr("knowledge.services.jobs.submit.send_task", enqueue.send_task)
    tenant = TenantFactory.create()
    stale, fresh, finished = submitted(tenant), submitted(tenant), submitted(tenant)
    job_run(job_id=finished.pk)
    long_ago = timezone.now() - timedelta(minutes=5)
    IngestJob.objects.filter(pk__in=[stale.pk, finished.pk]).update(
        created_at=long_ago, heartbeat_at=long_ago
    )
    assert jobs_resume() == [stale.pk]
    assert sent == [(enqueue.RUN_INGEST_JOB, stale.pk)]
    assert fresh.pk not in jobs_resume()


def test_purge_deletes_old_finished_jobs_but_keeps_their_documents() -> None:
    tenant = TenantFactory.create()
    old, running = submitted(tenant), submitted(tenant)
    job_run(job_id=old.pk)
    IngestJob.objects.filter(pk=old.pk).update(finished_at=timezone.now() - timedelta(days=30))
    IngestJob.objects.filter(pk=running.pk).update(created_at=timezone.now() - timedelta(days=30))
    with override_settings(KNOWLEDGE_JOB_RETENTION_DAYS=7):
        assert jobs_purge() >= 1
    assert list(IngestJob.objects.values_list("pk", flat=True)) == [running.pk]
    assert Document.objects.filter(tenant=tenant).count() == 2


def test_inside_pushes_inline_a_write_pushes_after_its_commit_not_through_the_broker(
    monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    monkeypatch.setattr(enqueue, "is_external", lambda backend: True)
    sent: list[Any] = []
    monkeypatch.setattr(enqueue, "send_task", lambda *args, **kwargs: sent.append(args))
    pushed: list[list[int]] = []
    with enqueue.pushes_inline(pushed.append), django_capture_on_commit_callbacks(execute=True):
        enqueue.schedule_index_sync([3, 1, 3])
        assert pushed == []  # not before the commit
    assert pushed == [[1, 3]] and sent == []
    with django_capture_on_commit_callbacks(execute=True):
        enqueue.schedule_index_sync([5])
    assert sent == [(enqueue.SYNC_DOCUMENTS, [5])] and pushed == [[1, 3]]


@override_settings(KNOWLEDGE_JOB_SLICE_DOCUMENTS=16)
def test_the_last_documents_of_a_job_go_out_in_ever_smaller_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guided slices: a quarter of what is pending, at most a full slice, so workers sharing a job finish
    together instead of one embedding a full slice while the others have nothing left."""
    from knowledge.services.jobs import run

    job = submitted(TenantFactory.create(), count=40)
    sizes: list[int] = []
    claim = run._claim

    def recorded(job_id: int) -> Any:
        items = claim(job_id)
        sizes.append(len(items))
        return items

    monkeypatch.setattr(run, "_claim", recorded)
    job_run(job_id=job.pk)
    assert sizes == [10, 8, 6, 4, 3, 3, 2, 1, 1, 1, 1, 0]
    assert Document.objects.filter(tenant=job.tenant).count() == 40
