"""Request and response serializers; requests reject unknown fields and non-finite vectors."""

from __future__ import annotations

import math
from typing import Any

from rest_framework import serializers

from knowledge.models import Document


class StrictSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """Refuses fields it does not declare, so typos are not silently ignored."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


class VectorField(serializers.ListField):
    """A non-empty list of finite floats."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=serializers.FloatField(), min_length=1, max_length=16000, **kwargs)

    def to_internal_value(self, data: Any) -> list[float]:
        values = super().to_internal_value(data)
        if not all(math.isfinite(v) for v in values):
            raise serializers.ValidationError("Vector values must be finite numbers (no NaN or Infinity).")
        return [float(v) for v in values]


class SearchRequestSerializer(StrictSerializer):
    query = serializers.CharField(required=False, allow_blank=True, max_length=10000)
    embedding = VectorField(required=False)
    top_k = serializers.IntegerField(required=False, default=10, min_value=1, max_value=100)
    connector_ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1), required=False, max_length=1000
    )
    environment = serializers.SlugField(required=False, max_length=64)
    on_behalf_of = serializers.CharField(required=False, max_length=320)
    bypass_acl = serializers.BooleanField(required=False, default=False)
    explain = serializers.BooleanField(required=False, default=False)
    source_account_id = serializers.SlugField(required=False, max_length=64)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not (attrs.get("query") or "").strip() and "embedding" not in attrs:
            raise serializers.ValidationError({"query": ["Give a query, an embedding, or both."]})
        return attrs


class AclSerializer(StrictSerializer):
    public = serializers.BooleanField(required=False, default=False)
    users = serializers.ListField(
        child=serializers.EmailField(max_length=320), required=False, max_length=10000
    )
    groups = serializers.ListField(
        child=serializers.CharField(max_length=320), required=False, max_length=10000
    )


class IndexRequestSerializer(StrictSerializer):
    id = serializers.CharField(max_length=512)
    content = serializers.CharField(allow_blank=False, trim_whitespace=False)
    title = serializers.CharField(required=False, allow_blank=True, max_length=500, default="")
    source_url = serializers.URLField(required=False, allow_blank=True, max_length=2000, default="")
    embedding = VectorField(required=False)
    metadata = serializers.DictField(required=False, default=dict)
    acl = AclSerializer(required=False)
    environment = serializers.SlugField(required=False, max_length=64)
    language = serializers.CharField(required=False, max_length=32)
    source_account_id = serializers.SlugField(required=False, max_length=64)


class SearchResultSerializer(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField(help_text="Chunk id.")
    document_id = serializers.CharField(help_text="The document's external id.")
    chunk_index = serializers.IntegerField()
    source_account_id = serializers.CharField(help_text="Tenant slug.")
    title = serializers.CharField()
    content = serializers.CharField()
    source_url = serializers.CharField()
    rrf_score = serializers.FloatField()
    similarity = serializers.FloatField(allow_null=True, help_text="Cosine similarity (vector lane).")
    text_rank = serializers.FloatField(allow_null=True, help_text="Keyword-lane score.")
    explain = serializers.DictField(required=False, help_text="Per-lane ranks and scores (explain=true).")


class SearchResponseSerializer(serializers.Serializer):  # type: ignore[type-arg]
    results = SearchResultSerializer(many=True)
    count = serializers.IntegerField()
    warnings = serializers.ListField(child=serializers.CharField())


class DocumentSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    id = serializers.CharField(source="external_id")
    connector_id = serializers.IntegerField()
    environment = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    source_account_id = serializers.CharField(source="tenant.slug")
    acl = serializers.SerializerMethodField()
    chunk_count = serializers.SerializerMethodField()

    class Meta:
        model = Document
        fields = [
            *("id", "connector_id", "source_account_id", "title", "source_url", "content_hash", "metadata"),
            *("language", "environment", "acl", "chunk_count", "deleted_at", "created_at", "updated_at"),
        ]

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
