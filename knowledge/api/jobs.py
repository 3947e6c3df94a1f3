"""Background indexing over the API: batches and big documents become jobs (202), read and cancelled here."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from knowledge.api.authentication import request_key
from knowledge.api.parsers import LimitedJSONParser, NDJSONParser
from knowledge.api.permissions import CanIndex
from knowledge.api.serializers import ERRORS, ErrorSerializer, IndexRequestSerializer
from knowledge.errors import InvalidInput
from knowledge.models import ApiKey, Tenant
from knowledge.selectors.jobs import JobProgress, job_get, job_progress
from knowledge.selectors.scopes import tenant_for_key
from knowledge.services.jobs import job_cancel, job_submit

IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    str,
    location=OpenApiParameter.HEADER,
    required=False,
    description=(
        "Any unique string (up to 255 characters). A retry with the same key and body returns the "
        "first request's job instead of creating another; the same key with another body is a 409."
    ),
)
MAX_IDEMPOTENCY_KEY = 255


class JobSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """The schema of a job answer (rendered by `job_body`)."""

    id = serializers.IntegerField()
    state = serializers.ChoiceField(
        choices=["queued", "running", "succeeded", "partial", "failed", "cancelled"]
    )
    documents = serializers.DictField(
        child=serializers.IntegerField(), help_text="total, pending, done, failed, cancelled."
    )
    chunks = serializers.DictField(help_text="written so far; estimated_total from the characters left.")
    errors = serializers.ListField(child=serializers.DictField(), help_text="First 100 failed documents.")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    seconds = serializers.FloatField(allow_null=True)
    url = serializers.CharField()


def batch_limits(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Schema post-processing hook: a batch holds 1 to KNOWLEDGE_BATCH_MAX_DOCUMENTS documents
    (drf-spectacular does not carry a list serializer's lengths into the schema)."""
    operation = result.get("paths", {}).get("/api/v1/index/batch", {}).get("post", {})
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body is not None:
        body.update(minItems=1, maxItems=settings.KNOWLEDGE_BATCH_MAX_DOCUMENTS)
    return result


RUNNING_JOB: dict[str, Any] = {
    "id": 42,
    "state": "running",
    "documents": {"total": 1000, "pending": 680, "done": 318, "failed": 2, "cancelled": 0},
    "chunks": {"written": 702, "estimated_total": 2210},
    "errors": [{"position": 7, "id": "doc-7", "message": "doc-7: unknown environment 'prod'"}],
    "created_at": "2026-12-02T10:00:00Z",
    "started_at": "2026-12-02T10:00:01Z",
    "finished_at": None,
    "seconds": 41.2,
    "url": "/api/v1/jobs/42",
}
JOB_EXAMPLE = OpenApiExample("A running job", value=RUNNING_JOB, response_only=True)
BATCH_EXAMPLE = OpenApiExample(
    "Two documents with their ACLs",
    value=[
        {
            "id": "eng/oncall",
            "content": "# On-call\nPages are answered within 15 minutes.",
            "acl": {"groups": ["eng"]},
        },
        {
            "id": "handbook/vacation",
            "content": "Employees get 25 days of paid vacation.",
            "acl": {"public": True},
        },
    ],
    request_only=True,
)
CANCELLED_EXAMPLE = OpenApiExample(
    "Cancelled part way",
    value={
        **RUNNING_JOB,
        "state": "cancelled",
        "documents": {"total": 1000, "pending": 0, "done": 320, "failed": 0, "cancelled": 680},
        "errors": [],
        "finished_at": "2026-12-02T10:00:43Z",
        "seconds": 42.0,
    },
    response_only=True,
)


def job_body(progress: JobProgress) -> dict[str, Any]:
    job = progress.job
    return {
        "id": job.pk,
        "state": job.state,
        "documents": progress.documents,
        "chunks": {"written": progress.chunks_written, "estimated_total": progress.chunks_estimated_total},
        "errors": progress.errors,
        "created_at": job.created_at.isoformat(),
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "seconds": progress.seconds,
        "url": reverse("api-job", kwargs={"job_id": job.pk}),
    }


def idempotency_key(request: Request) -> str:
    value = request.headers.get("Idempotency-Key", "").strip()
    if len(value) > MAX_IDEMPOTENCY_KEY or not value.isprintable():
        raise InvalidInput(
            f"Idempotency-Key must be printable and at most {MAX_IDEMPOTENCY_KEY} characters",
            field="Idempotency-Key",
        )
    return value


def wants_job(request: Request, data: dict[str, Any]) -> bool:
    """A client that asked (`Prefer: respond-async`), or a document to chunk and embed that is above
    the in-request size (a caller-embedded document is one chunk and needs no embedding)."""
    prefer = {part.strip().lower() for part in request.headers.get("Prefer", "").split(",")}
    if "respond-async" in prefer:
        return True
    return data.get("embedding") is None and len(data["content"]) > settings.KNOWLEDGE_INLINE_INDEX_CHARS


def submitted_response(
    request: Request, tenant: Tenant, key: ApiKey, documents: list[dict[str, Any]], *, numbered: bool = True
) -> Response:
    """202 with the new job, or the earlier job of the same Idempotency-Key (header
    `Idempotent-Replayed`). `numbered`: name a refused document's field by its position in the batch."""
    submitted = job_submit(
        tenant=tenant,
        documents=documents,
        api_key=key,
        idempotency_key=idempotency_key(request),
        numbered=numbered,
    )
    body = job_body(job_progress(job=submitted.job))
    headers = {"Location": body["url"]}
    if submitted.replayed:
        headers["Idempotent-Replayed"] = "true"
    return Response(body, status=status.HTTP_202_ACCEPTED, headers=headers)


def validated_batch(key: ApiKey, data: Any) -> list[dict[str, Any]]:
    """Every document of a batch, validated as /index bodies; any invalid one refuses the batch."""
    if isinstance(data, dict) and set(data) == {"documents"}:
        data = data["documents"]
    if not isinstance(data, list) or not data:
        raise InvalidInput(
            "send a non-empty JSON array of documents (or NDJSON, one per line)", field="documents"
        )
    limit = settings.KNOWLEDGE_BATCH_MAX_DOCUMENTS
    if len(data) > limit:
        raise InvalidInput(
            f"a batch holds at most {limit} documents; this one has {len(data)}", field="documents"
        )
    problems, documents = {}, []
    for i, item in enumerate(data):
        body = IndexRequestSerializer(data=item)
        if body.is_valid():
            documents.append(dict(body.validated_data))
        else:
            problems[str(i)] = body.errors
    if problems:
        raise serializers.ValidationError(problems)
    seen: dict[str, int] = {}
    for i, document in enumerate(documents):
        if document["id"] in seen:
            raise InvalidInput(f"documents {seen[document['id']]} and {i} have the same id", field=f"{i}.id")
        seen[document["id"]] = i
        tenant_for_key(key=key, source_account_id=document.pop("source_account_id", None))
    return documents


class IndexBatchView(APIView):
    permission_classes = [CanIndex]
    parser_classes = [LimitedJSONParser, NDJSONParser]

    @property
    def max_request_bytes(self) -> int:
        return int(settings.KNOWLEDGE_MAX_BATCH_BYTES)

    @extend_schema(
        request={
            "application/json": IndexRequestSerializer(many=True),
            "application/x-ndjson": IndexRequestSerializer,
        },
        parameters=[IDEMPOTENCY_KEY],
        responses={202: JobSerializer, 409: ErrorSerializer, 413: ErrorSerializer, **ERRORS},
        examples=[BATCH_EXAMPLE, JOB_EXAMPLE],
        summary="Index up to KNOWLEDGE_BATCH_MAX_DOCUMENTS documents in the background (a job)",
    )
    def post(self, request: Request) -> Response:
        key = request_key(request)
        documents = validated_batch(key, request.data)
        return submitted_response(request, key.tenant, key, documents)


class JobView(APIView):
    permission_classes = [CanIndex]

    @extend_schema(
        responses={200: JobSerializer, 404: ErrorSerializer, **ERRORS},
        examples=[JOB_EXAMPLE],
        summary="An ingest job: state, progress, per-document errors, timings",
    )
    def get(self, request: Request, job_id: int) -> Response:
        job = job_get(tenant=request_key(request).tenant, job_id=job_id)
        return Response(job_body(job_progress(job=job)))

    @extend_schema(
        responses={200: JobSerializer, 404: ErrorSerializer, **ERRORS},
        examples=[CANCELLED_EXAMPLE],
        summary="Cancel a job: documents not yet written never are (those written stay)",
    )
    def delete(self, request: Request, job_id: int) -> Response:
        job = job_get(tenant=request_key(request).tenant, job_id=job_id)
        job_cancel(job=job)
        job.refresh_from_db()
        return Response(job_body(job_progress(job=job)))
