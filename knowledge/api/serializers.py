"""Request and response serializers; requests reject unknown fields and non-finite vectors."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from knowledge.access.principals import MAX_ACL_NAMES
from knowledge.api.fields import (
    JsonObjectField,
    StageSpecField,
    StrictBooleanField,
    StrictCharField,
    StrictEmailField,
    StrictFloatField,
    StrictIntegerField,
    StrictSlugField,
    StrictURLField,
)
from knowledge.models import Document
from knowledge.pipeline.stages.registry import MAX_REQUEST_STAGES
from retrieval_backends.types import vector_problem


class StrictSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """Refuses fields it does not declare, so typos are not silently ignored."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


class StrictSerializerSchema(OpenApiSerializerExtension):  # type: ignore[no-untyped-call]
    """Documents that strict serializers refuse undeclared fields (`additionalProperties: false`)."""

    target_class = StrictSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        return {**schema, "additionalProperties": False}


class VectorField(serializers.ListField):
    """A non-empty list of numbers whose values and norm fit pgvector's 32-bit floats."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", "Finite 32-bit floats; not all zeros. Its dimension must be indexed.")
        super().__init__(child=StrictFloatField(), min_length=1, max_length=16000, **kwargs)

    def to_internal_value(self, data: Any) -> list[float]:
        values = [float(v) for v in super().to_internal_value(data)]
        problem = vector_problem(values)
        if problem:
            raise serializers.ValidationError(problem[0].upper() + problem[1:] + ".")
        return values


class SearchRequestSerializer(StrictSerializer):
    query = StrictCharField(required=False, allow_blank=True, max_length=10000)
    embedding = VectorField(required=False)
    top_k = StrictIntegerField(required=False, default=10, min_value=1, max_value=100)
    connector_ids = serializers.ListField(
        child=StrictIntegerField(min_value=1, max_value=2**63 - 1), required=False, max_length=1000
    )
    environment = StrictSlugField(required=False, max_length=64)
    on_behalf_of = StrictCharField(required=False, max_length=320)
    bypass_acl = StrictBooleanField(required=False, default=False)
    explain = StrictBooleanField(required=False, default=False)
    source_account_id = StrictSlugField(required=False, max_length=64)
    stages = serializers.ListField(
        child=StageSpecField(),
        required=False,
        max_length=MAX_REQUEST_STAGES,
        help_text="Replaces the configured stages for this search: names (query stages first) or "
        '{"name": ..., "options": {...}} with bounded options.',
    )
    trace = StrictBooleanField(required=False, default=False, help_text="Return each stage's record.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not (attrs.get("query") or "").strip() and "embedding" not in attrs:
            raise serializers.ValidationError({"query": ["Give a query, an embedding, or both."]})
        return attrs


class AclSerializer(StrictSerializer):
    public = StrictBooleanField(required=False, default=False)
    users = serializers.ListField(
        child=StrictEmailField(max_length=320), required=False, max_length=MAX_ACL_NAMES
    )
    groups = serializers.ListField(
        child=StrictCharField(max_length=320), required=False, max_length=MAX_ACL_NAMES
    )


class IndexRequestSerializer(StrictSerializer):
    id = StrictCharField(max_length=512)
    content = StrictCharField(allow_blank=False)
    title = StrictCharField(required=False, allow_blank=True, max_length=500, default="")
    source_url = StrictURLField(required=False, allow_blank=True, max_length=2000, default="")
    embedding = VectorField(required=False)
    metadata = JsonObjectField(required=False, default=dict)
    acl = AclSerializer(required=False)
    environment = StrictSlugField(required=False, max_length=64)
    language = StrictCharField(required=False, max_length=32)
    source_account_id = StrictSlugField(required=False, max_length=64)


class SearchResultSerializer(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField(help_text="Chunk id.")
    document_id = serializers.CharField(help_text="The document's external id.")
    chunk_index = serializers.IntegerField()
    source_account_id = serializers.CharField(help_text="Tenant slug.")
    title = serializers.CharField()
    content = serializers.CharField()
    source_url = serializers.CharField()
    page = serializers.IntegerField(
        allow_null=True,
        help_text="The page (PDF) or slide (PPTX) the chunk starts on; null for unpaged sources.",
    )
    score = serializers.FloatField(help_text="The fused score the results are ranked by (higher is better).")
    rrf_score = serializers.FloatField(
        help_text="Deprecated alias of `score` (the fusion is not always RRF)."
    )
    similarity = serializers.FloatField(allow_null=True, help_text="Cosine similarity (vector lane).")
    parent_content = serializers.CharField(
        allow_null=True, help_text="The parent chunk's text (parent_expand stage), else null."
    )
    excerpts = serializers.ListField(
        child=serializers.CharField(), help_text="Quote-safe passages (compress stage): exact substrings."
    )
    matched_queries = serializers.ListField(
        child=serializers.IntegerField(), help_text="Indexes of the planned queries that found this chunk."
    )
    text_rank = serializers.FloatField(
        allow_null=True,
        help_text=(
            "Keyword-lane (BM25) score; null when the chunk was not a keyword hit, and for callers without "
            "bypass_acl unless KNOWLEDGE_KEYWORD_SCORES=everyone (the statistics count hidden chunks)."
        ),
    )
    explain = serializers.DictField(required=False, help_text="Per-lane ranks and scores (explain=true).")


class StageTraceSerializer(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField()
    kind = serializers.CharField()
    phase = serializers.CharField()
    status = serializers.ChoiceField(choices=["success", "error", "skipped"])
    queries = serializers.DictField(child=serializers.IntegerField())
    hits = serializers.DictField(child=serializers.IntegerField())
    duration_ms = serializers.FloatField()
    warnings = serializers.ListField(child=serializers.CharField())
    error = serializers.CharField(allow_null=True)
    preview = serializers.DictField()


class SearchResponseSerializer(serializers.Serializer):  # type: ignore[type-arg]
    results = SearchResultSerializer(many=True)
    count = serializers.IntegerField()
    warnings = serializers.ListField(child=serializers.CharField())
    trace = StageTraceSerializer(many=True, required=False, help_text="With trace=true.")


class DocumentSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    id = serializers.CharField(source="external_id")
    connector_id = serializers.IntegerField()
    environment = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    source_account_id = serializers.CharField(source="tenant.slug")
    acl = serializers.SerializerMethodField()
    chunk_count = serializers.SerializerMethodField()

    class Meta:
        model = Document
        fields = [
            *("id", "connector_id", "source_account_id", "title", "source_url", "content_hash", "metadata"),
            *("language", "environment", "acl", "chunk_count", "deleted_at", "created_at", "updated_at"),
        ]

    @extend_schema_field(AclSerializer)
    def get_acl(self, document: Document) -> dict[str, Any]:
        principals = list(document.allowed_principals.all())
        return {
            "public": document.is_public,
            "users": sorted(p.external_id for p in principals if p.kind == "user"),
            "groups": sorted(p.external_id for p in principals if p.kind == "group"),
        }

    def get_chunk_count(self, document: Document) -> int:
        return document.chunks.count()


class StatusSerializer(serializers.Serializer):  # type: ignore[type-arg]
    status = serializers.CharField()


class HealthSerializer(serializers.Serializer):  # type: ignore[type-arg]
    status = serializers.CharField()
    checks = serializers.DictField(child=serializers.CharField())


class ErrorSerializer(serializers.Serializer):  # type: ignore[type-arg]
    error = serializers.CharField()
    message = serializers.CharField()
    fields = serializers.DictField(child=serializers.ListField(child=serializers.CharField()), required=False)


# The error answers every authenticated endpoint can give (its schema adds its own).
ERRORS = {400: ErrorSerializer, 401: ErrorSerializer, 403: ErrorSerializer, 429: ErrorSerializer}
