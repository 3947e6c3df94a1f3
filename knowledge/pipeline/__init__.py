"""Swappable retrieval layers: embedder, chunker, indexer (backend), fuser, reranker, compressor."""
