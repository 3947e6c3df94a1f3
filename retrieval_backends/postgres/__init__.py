"""PostgreSQL backend: pgvector HNSW vector lane and tsvector keyword lane on the canonical tables."""

from retrieval_backends.postgres.backend import PostgresRetrievalBackend

__all__ = ["PostgresRetrievalBackend"]
