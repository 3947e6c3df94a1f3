"""The one document write service: every path (API, ingest, connector sync, admin) goes through it."""

from knowledge.services.writes.service import WriteStats, documents_check, documents_write, source_write

__all__ = ["WriteStats", "documents_check", "documents_write", "source_write"]
