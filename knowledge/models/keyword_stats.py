"""Corpus statistics for BM25, per tenant and text-search language, kept in step by database triggers."""

from __future__ import annotations

from django.db import models

from knowledge.models.tenancy import Tenant


class KeywordStatistics(models.Model):
    """Number of live chunks and their total length in lexemes (average length = total / count)."""

    pk = models.CompositePrimaryKey("tenant_id", "language")
    tenant = models.ForeignKey(Tenant, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    language = models.CharField(max_length=32)
    chunk_count = models.BigIntegerField(default=0)
    total_length = models.BigIntegerField(default=0)

    class Meta:
        verbose_name_plural = "keyword statistics"

    def __str__(self) -> str:
        return f"{self.tenant_id}/{self.language}: {self.chunk_count} chunks"

    @property
    def average_length(self) -> float:
        return self.total_length / self.chunk_count if self.chunk_count else 0.0


class KeywordTerm(models.Model):
    """Document frequency of one lexeme: how many live chunks of the tenant contain it.

    The table also has `term_id`, the lexeme's number in the chunks' `bm25_weights` (migration 0018),
    outside the ORM. Rows are never deleted (df drops to 0), so the numbers stay valid.
    """

    pk = models.CompositePrimaryKey("tenant_id", "language", "lexeme")
    # No index of its own: the primary key leads with it. A tenant-only index let the planner, trusting
    # statistics that put a loading tenant at one term, read all of its terms for each lexeme looked up.
    tenant = models.ForeignKey(
        Tenant, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    language = models.CharField(max_length=32)
    lexeme = models.TextField()
    df = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.tenant_id}/{self.language}/{self.lexeme}: {self.df}"
