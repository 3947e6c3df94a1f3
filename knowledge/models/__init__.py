"""Canonical models; PostgreSQL is the source of truth for everything search returns."""

from knowledge.models.access_marks import TenantAccessMark
from knowledge.models.api_keys import ApiKey
from knowledge.models.audit import AccessAudit, SearchAudit
from knowledge.models.connectors import Connector
from knowledge.models.documents import Chunk, ChunkEmbedding, Document
from knowledge.models.embedding_state import ActiveEmbedder, ReindexJob
from knowledge.models.eval_corpora import EvalCorpus
from knowledge.models.index_sync import IndexTombstone, SyncRun
from knowledge.models.jobs import IngestJob, IngestJobItem
from knowledge.models.keyword_stats import KeywordStatistics, KeywordTerm
from knowledge.models.policies import DocumentPolicy
from knowledge.models.principals import Principal
from knowledge.models.tenancy import Environment, Tenant

__all__ = [
    "AccessAudit",
    "ActiveEmbedder",
    "ApiKey",
    "Chunk",
    "ChunkEmbedding",
    "Connector",
    "Document",
    "DocumentPolicy",
    "Environment",
    "EvalCorpus",
    "IndexTombstone",
    "IngestJob",
    "IngestJobItem",
    "KeywordStatistics",
    "KeywordTerm",
    "Principal",
    "ReindexJob",
    "SearchAudit",
    "SyncRun",
    "Tenant",
    "TenantAccessMark",
]
