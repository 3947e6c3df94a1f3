"""Table names of the canonical store, from the models' `_meta`, so no statement spells one out."""

from __future__ import annotations

from knowledge.models import (
    ApiKey,
    Chunk,
    ChunkEmbedding,
    Document,
    IndexTombstone,
    KeywordStatistics,
    KeywordTerm,
    Principal,
    Tenant,
)

DOCUMENT = Document._meta.db_table
CHUNK = Chunk._meta.db_table
EMBEDDING = ChunkEmbedding._meta.db_table
STATISTICS = KeywordStatistics._meta.db_table
TERMS = KeywordTerm._meta.db_table
TENANT = Tenant._meta.db_table
PRINCIPAL = Principal._meta.db_table
API_KEY = ApiKey._meta.db_table
TOMBSTONE = IndexTombstone._meta.db_table
# The search tables ANALYZE covers after a bulk load.
SEARCH_TABLES = (DOCUMENT, CHUNK, EMBEDDING, TERMS)
