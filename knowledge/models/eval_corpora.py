"""What an eval corpus's ingested copy was made from, so `evals retrieval` reuses it or rebuilds it."""

from __future__ import annotations

from django.db import models

from knowledge.models.connectors import Connector


class EvalCorpus(models.Model):
    """The fingerprint (corpus file hash, embedder, chunker) of the copy in an eval tenant's connector.

    The corpus hash is blank while an ingest is under way, so an interrupted one is resumed.
    """

    connector = models.OneToOneField(Connector, on_delete=models.CASCADE, related_name="eval_corpus")
    corpus_hash = models.CharField(max_length=64, blank=True)
    embedder = models.CharField(max_length=200, blank=True)
    chunker = models.CharField(max_length=200, blank=True)
    documents = models.PositiveIntegerField(default=0)
    chunks = models.PositiveIntegerField(default=0)
    ingest_seconds = models.FloatField(default=0.0)  # the last complete ingest's wall time
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "eval corpora"

    def __str__(self) -> str:
        return f"{self.connector}: {self.documents} documents"

    def fingerprint(self) -> dict[str, str | None]:
        return {"corpus_hash": self.corpus_hash or None, "embedder": self.embedder, "chunker": self.chunker}
