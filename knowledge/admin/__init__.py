"""Django admin: staff curate tenants, environments, connectors, principals, documents and chunks.

Every write an admin makes goes through the services (write service, ACL overrides, deletions), so
the admin can never leave chunks, vectors or an index out of step with their documents.
"""

from knowledge.admin import audit, chunks, connectors, documents, identity, jobs, policies

__all__ = ["audit", "chunks", "connectors", "documents", "identity", "jobs", "policies"]
