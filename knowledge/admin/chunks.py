"""Chunks and vectors are derived data: the admin shows them read-only and never deletes them."""

from __future__ import annotations

from django.contrib import admin

from knowledge.admin.base import ReadOnlyAdmin
from knowledge.models import Chunk, ChunkEmbedding


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
