"""The knowledge app: tenants, connectors, principals, documents, chunks and their embeddings."""
