"""Bulk ingestion: the write service under its historical name, and the source types it takes."""

from __future__ import annotations

from knowledge.connectors.types import SourceAcl, SourceDocument
from knowledge.services.writes import WriteStats, documents_write
from knowledge.services.writes.service import unique_sources

IngestStats = WriteStats
documents_ingest = documents_write

__all__ = ["IngestStats", "SourceAcl", "SourceDocument", "documents_ingest", "unique_sources"]
