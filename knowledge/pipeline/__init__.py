"""The retrieval pipeline's swappable layers: embedder, chunker, indexer (backend), fuser, reranker, compressor."""
