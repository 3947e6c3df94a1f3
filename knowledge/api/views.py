"""API views: parse input, call one service or selector, render the result."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from knowledge import names
from knowledge.api import examples
from knowledge.api.authentication import request_key
from knowledge.api.errors import RETRY_AFTER_SECONDS
from knowledge.api.hits import render_hit
from knowledge.api.jobs import IDEMPOTENCY_KEY, JOB_EXAMPLE, JobSerializer, submitted_response, wants_job
from knowledge.api.pagination import StrictLimitOffsetPagination
from knowledge.api.params import query_int, query_slug, reject_unknown_params
from knowledge.api.permissions import CanIndex, CanSearch
from knowledge.api.serializers import (
    ERRORS,
    DocumentSerializer,
    ErrorSerializer,
    HealthSerializer,
    IndexRequestSerializer,
    SearchRequestSerializer,
    SearchResponseSerializer,
    StatusSerializer,
)
from knowledge.errors import NotFound
from knowledge.models import ApiKey, Document, SearchAudit
from knowledge.pipeline.stages.registry import request_stages
from knowledge.search import SearchHit, search_chunks
from knowledge.search.disclosure import disclosed
from knowledge.selectors.documents import document_get, document_list
from knowledge.selectors.health import dependency_health
from knowledge.selectors.identity import principal_ids
from knowledge.selectors.scopes import (
    connectors_by_id,
    environment_by_slug,
    identity_warnings,
    search_scope_for_key,
    tenant_for_key,
)
from knowledge.services.api_indexing import api_connector_id, api_document_index
from knowledge.services.audit import search_record
from knowledge.services.documents import document_hard_delete
from retrieval_backends.types import SearchScope

PREFER = OpenApiParameter(
    "Prefer",
    str,
    location=OpenApiParameter.HEADER,
    required=False,
    description=(
        "`respond-async`: write the document in the background and answer 202 with a job. Documents "
        "longer than KNOWLEDGE_INLINE_INDEX_CHARS (default 100,000 characters) always are."
    ),
)


def _visible_to(key: ApiKey) -> frozenset[int] | None:
    """A key bound to a user sees only that user's documents (its principal and groups); a key with no
    principal is index-scoped and sees the tenant's documents."""
    if key.principal is None:
        return None
    return principal_ids(tenant=key.tenant, user_external_id=key.principal.external_id)


def _external_ids(hits: list[SearchHit]) -> dict[int, str]:
    """Each hit's document id as the source knows it: read with the hits, else asked for once."""
    ids = {h.document_id: h.document_external_id for h in hits if h.document_external_id is not None}
    unread = {h.document_id for h in hits} - ids.keys()
    if unread:
        ids |= dict(Document.objects.filter(pk__in=unread).values_list("pk", "external_id"))
    return ids


def _audit(key: ApiKey, scope: SearchScope, data: dict[str, Any], document_ids: list[int]) -> None:
    on_behalf_of = data.get("on_behalf_of")
    if data["bypass_acl"]:
        actor = SearchAudit.Actor.BYPASS
    else:
        actor = SearchAudit.Actor.ON_BEHALF_OF if on_behalf_of is not None else SearchAudit.Actor.KEY
    principal = (
        on_behalf_of if on_behalf_of is not None else (key.principal.external_id if key.principal else "")
    )
    filters = {
        "top_k": data["top_k"],
        **{
            name: data[name]
            for name in ("environment", "connector_ids", "source_account_id")
            if data.get(name)
        },
    }
    search_record(
        tenant_id=scope.tenant_id,
        api_key_id=key.pk,
        actor=actor,
        principal=names.user_id(principal),
        query=data.get("query"),
        filters=filters,
        document_ids=document_ids,
    )


class SearchView(APIView):
    permission_classes = [CanSearch]

    @extend_schema(
        request=SearchRequestSerializer,
        responses={200: SearchResponseSerializer, 413: ErrorSerializer, **ERRORS},
        examples=[*examples.SEARCH, examples.WRONG_DIMENSION],
        summary="Hybrid search of the chunks the caller may see",
    )
    def post(self, request: Request) -> Response:
        body = SearchRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        key = request_key(request)
        scope = search_scope_for_key(
            key=key,
            source_account_id=data.get("source_account_id"),
            environment=data.get("environment"),
            connector_ids=data.get("connector_ids"),
            on_behalf_of=data.get("on_behalf_of"),
            bypass_acl=data["bypass_acl"],
        )
        pipeline = request_stages(data["stages"]) if "stages" in data else None
        result = search_chunks(
            scope=scope,
            query_text=data.get("query"),
            query_embedding=data.get("embedding"),
            limit=data["top_k"],
            pipeline=pipeline,
            trace=data["trace"],
        )
        _audit(key, scope, data, [h.document_id for h in result.hits])
        ids = _external_ids(result.hits)
        hits = disclosed(result.hits, bypass_acl=data["bypass_acl"])
        results = [render_hit(h, ids, key.tenant.slug, explain=data["explain"]) for h in hits]
        warnings = [*identity_warnings(scope=scope, on_behalf_of=data.get("on_behalf_of")), *result.warnings]
        payload: dict[str, Any] = {"results": results, "count": len(results), "warnings": warnings}
        if result.trace is not None:
            payload["trace"] = result.trace
        return Response(payload)


class IndexView(APIView):
    permission_classes = [CanIndex]

    @extend_schema(
        request=IndexRequestSerializer,
        parameters=[IDEMPOTENCY_KEY, PREFER],
        responses={
            200: StatusSerializer,
            201: StatusSerializer,
            202: JobSerializer,
            409: ErrorSerializer,
            413: ErrorSerializer,
            **ERRORS,
        },
        examples=[*examples.INDEX, examples.INDEX_UNCHANGED, JOB_EXAMPLE, examples.BAD_INPUT],
        summary="Create or update one document (in the request; a big one, or on request, as a job)",
    )
    def post(self, request: Request) -> Response:
        body = IndexRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        key = request_key(request)
        data = dict(body.validated_data)
        tenant = tenant_for_key(key=key, source_account_id=data.pop("source_account_id", None))
        if wants_job(request, data):
            return submitted_response(request, tenant, key, [data], numbered=False)
        result = api_document_index(tenant=tenant, data=data)
        if result.content_changed or result.created:
            return Response({"status": "indexed"}, status=status.HTTP_201_CREATED)
        return Response({"status": "unchanged"}, status=status.HTTP_200_OK)


CONNECTOR_ID = {"type": "integer", "minimum": 0}
SLUG = {"type": "string", "pattern": r"^[-a-zA-Z0-9_]+$", "maxLength": 64}
DOCUMENT_FILTERS = [
    OpenApiParameter("connector_id", CONNECTOR_ID, description="Only this connector's documents."),
    OpenApiParameter("environment", SLUG, description="Only documents of this environment (slug)."),
]
CONNECTOR_PARAM = [
    OpenApiParameter(
        "connector_id", CONNECTOR_ID, description="Connector of the document (default: the API connector)."
    )
]


class DocumentListView(APIView):
    permission_classes = [CanIndex]
    pagination_class = StrictLimitOffsetPagination  # read by the schema generator, too

    @extend_schema(
        parameters=DOCUMENT_FILTERS,
        responses={200: DocumentSerializer(many=True), **ERRORS},
        examples=examples.DOCUMENT_PAGE,
        summary="The tenant's documents, paginated (limit/offset)",
    )
    def get(self, request: Request) -> Response:
        key = request_key(request)
        reject_unknown_params(request, ("connector_id", "environment", "limit", "offset"))
        connector_id = query_int(request, "connector_id")
        if connector_id is not None:
            connectors_by_id(tenant=key.tenant, connector_ids=[connector_id], field="connector_id")
        env = environment_by_slug(tenant=key.tenant, slug=query_slug(request, "environment"))
        documents = document_list(
            tenant=key.tenant,
            connector_id=connector_id,
            environment_id=env.pk if env else None,
            visible_to=_visible_to(key),
        )
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(documents, request, view=self)
        return paginator.get_paginated_response(DocumentSerializer(page, many=True).data)


class DocumentDetailView(APIView):
    permission_classes = [CanIndex]

    def _connector_id(self, request: Request) -> int | None:
        key = request_key(request)
        reject_unknown_params(request, ("connector_id",))
        connector_id = query_int(request, "connector_id")
        if connector_id is None:
            return api_connector_id(tenant=key.tenant)
        connectors_by_id(tenant=key.tenant, connector_ids=[connector_id], field="connector_id")
        return connector_id

    def _document(self, request: Request, external_id: str) -> Document | None:
        connector_id = self._connector_id(request)
        if connector_id is None or "\x00" in external_id:  # no API connector yet; NUL is in no id
            return None
        key = request_key(request)
        return document_get(
            tenant=key.tenant, external_id=external_id, connector_id=connector_id, visible_to=_visible_to(key)
        )

    @extend_schema(
        parameters=CONNECTOR_PARAM,
        responses={200: DocumentSerializer, 404: ErrorSerializer, **ERRORS},
        examples=examples.DOCUMENT,
        summary="One document with its ACL and chunk count",
    )
    def get(self, request: Request, external_id: str) -> Response:
        document = self._document(request, external_id)
        if document is None:
            raise NotFound(f"no document {external_id!r}")
        return Response(DocumentSerializer(document).data)

    @extend_schema(
        parameters=CONNECTOR_PARAM,
        responses={204: None, **ERRORS},
        examples=examples.DELETE,
        summary="Delete a document with its chunks and vectors (idempotent: 204 even when absent)",
    )
    def delete(self, request: Request, external_id: str) -> Response:
        document = self._document(request, external_id)
        if document is not None:
            document_hard_delete(document_id=document.pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


class HealthView(APIView):
    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    @extend_schema(
        responses={200: HealthSerializer, 503: HealthSerializer},
        examples=examples.HEALTH,
        summary="Liveness of PostgreSQL and the backend (no API key needed)",
    )
    def get(self, request: Request) -> Response:
        checks = dependency_health()
        healthy = all(v == "ok" for v in checks.values())
        return Response(
            {"status": "ok" if healthy else "unavailable", "checks": checks},
            status=status.HTTP_200_OK if healthy else status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={} if healthy else {"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
