"""OpenSearch backend: BM25 and lucene k-NN lanes on a mirror of the canonical PostgreSQL chunks."""

from retrieval_backends.opensearch.backend import OpenSearchRetrievalBackend

__all__ = ["OpenSearchRetrievalBackend"]
