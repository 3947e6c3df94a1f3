"""Chunks and vectors are derived data: the admin shows them read-only and never deletes them."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from knowledge.models import Chunk, ChunkEmbedding


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Chunk)
class ChunkAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "document", "chunk_index", "tenant", "token_count", "is_deleted"]
    list_filter = ["tenant", "is_deleted", "language"]
    search_fields = ["content"]
    readonly_fields = [f.name for f in Chunk._meta.fields]


@admin.register(ChunkEmbedding)
class ChunkEmbeddingAdmin(ReadOnlyAdmin):
    list_display = ["chunk", "model", "dimensions", "tenant", "is_deleted", "created_at"]
    list_filter = ["model", "dimensions", "tenant"]
    exclude = ["embedding"]
    readonly_fields = [
        "chunk",
        "model",
        "dimensions",
        "tenant",
        "connector",
        "environment",
        "is_deleted",
        "acl_tokens",
    ]
