"""Documents, their chunks (with denormalised search filters) and per-model chunk embeddings."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Func, Q
from django.db.models.functions import Now
from pgvector.django import HalfVectorField, VectorField

from knowledge.models.connectors import Connector
from knowledge.models.principals import Principal
from knowledge.models.tenancy import Environment, Tenant

# SQL function (migration 0010) mapping a chunk's tsvector to `<tenant id>:<lexeme>` lexemes.
TENANT_LEXEMES_FUNCTION = "knowledge_tenant_lexemes"
# SQL function (migration 0036) mapping an ACL to `<tenant id>:<token>` tokens.
TENANT_TOKENS_FUNCTION = "knowledge_tenant_tokens"


class Document(models.Model):
    """A canonical source document; its ACL and state are denormalised onto its chunks.

    `is_public` and `allowed_principals` are the effective ACL that search applies. The source's own
    ACL (`source_is_public`, `source_principals`, from `acl_origin`) is kept beside it: it is the
    effective ACL unless an admin overrode it (`acl_override_at`), in which case syncs only update the
    source ACL and the override holds until an admin clears it. Likewise a soft delete by an admin
    (`deletion_origin = admin`) survives syncs; one because the source stopped listing the document is
    undone when the source lists it again.
    """

    class AclOrigin(models.TextChoices):
        REQUEST = "request", "API request"
        CONNECTOR = "connector", "Connector default"
        SOURCE = "source", "Source (ACL file)"

    class DeletionOrigin(models.TextChoices):
        NONE = "", "Not deleted"
        SOURCE = "source", "Gone from the source"
        ADMIN = "admin", "An admin"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="documents")
    connector = models.ForeignKey(Connector, on_delete=models.CASCADE, related_name="documents")
    external_id = models.CharField(max_length=512)
    title = models.CharField(max_length=500, blank=True)
    # Any URI (http(s), file://, s3://…): connectors cite where a document came from.
    source_url = models.CharField(max_length=2000, blank=True)
    content = models.TextField()
    content_hash = models.CharField(max_length=64, db_index=True)
    metadata = models.JSONField(default=dict, blank=True)
    language = models.CharField(
        max_length=32, default="english", help_text="PostgreSQL text-search configuration, e.g. english."
    )
    environment = models.ForeignKey(
        Environment, null=True, blank=True, on_delete=models.PROTECT, related_name="documents"
    )
    is_public = models.BooleanField(default=False, help_text="Visible to everyone in the tenant.")
    allowed_principals = models.ManyToManyField(Principal, blank=True, related_name="documents")
    source_is_public = models.BooleanField(default=False, editable=False)
    source_principals = models.ManyToManyField(
        Principal, blank=True, related_name="source_documents", editable=False
    )
    acl_origin = models.CharField(
        max_length=16, choices=AclOrigin.choices, default=AclOrigin.REQUEST, editable=False
    )
    acl_override_at = models.DateTimeField(null=True, blank=True, editable=False)
    acl_override_by = models.CharField(max_length=150, blank=True, editable=False)
    deleted_at = models.DateTimeField(null=True, blank=True, db_index=True)
    deletion_origin = models.CharField(
        max_length=8, choices=DeletionOrigin.choices, default=DeletionOrigin.NONE, blank=True, editable=False
    )
    source_updated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Index sync: bumped by triggers on every mirrored change; the version last pushed; push failures.
    index_version = models.BigIntegerField(default=1, db_default=1, editable=False)
    synced_version = models.BigIntegerField(default=0, db_default=0, editable=False)
    index_changed_at = models.DateTimeField(db_default=Now(), editable=False)
    sync_error = models.TextField(blank=True, default="", db_default="", editable=False)
    sync_attempts = models.PositiveIntegerField(default=0, db_default=0, editable=False)
    sync_retry_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The transaction that last bumped index_version: one bump per transaction is enough, and spares
    # the row a new version for every chunk, grant and vector statement of the same write.
    index_bumped_by = models.TextField(null=True, blank=True, editable=False)  # noqa: DJ001 (NULL: never)

    class Meta:
        ordering = ["tenant__slug", "connector__name", "external_id"]
        # The staff pages' own permissions (knowledge/pages/permissions.py): superusers have them;
        # an admin grants them to the groups that need them.
        permissions = [
            ("search_as_user", "Can search as another user (playground)"),
            ("search_bypass_acl", "Can search bypassing ACLs (playground)"),
            ("view_eval_reports", "Can read retrieval eval reports"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["connector", "external_id"], name="document_unique_external_id"),
            models.CheckConstraint(
                condition=models.Q(content_hash__regex=r"^[0-9a-f]{64}$"), name="document_content_hash_sha256"
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "connector"], name="document_tenant_connector"),
            # The reconciler's queue: dirty documents, oldest change first.
            models.Index(
                fields=["index_changed_at", "id"],
                name="document_dirty",
                condition=Q(index_version__gt=F("synced_version")),
            ),
        ]

    def __str__(self) -> str:
        return self.title or self.external_id

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None

    @property
    def index_dirty(self) -> bool:
        return self.index_version > self.synced_version

    @property
    def acl_overridden(self) -> bool:
        return self.acl_override_at is not None

    def clean(self) -> None:
        errors = {}
        if self.connector_id and self.tenant_id and self.connector.tenant_id != self.tenant_id:
            errors["connector"] = "The connector belongs to another tenant."
        if self.environment is not None and self.tenant_id and self.environment.tenant_id != self.tenant_id:
            errors["environment"] = "The environment belongs to another tenant."
        if errors:
            raise ValidationError(errors)


class SearchFilterFields(models.Model):
    """Denormalised copies of what search filters on; kept in step by `document_access_sync`."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    connector = models.ForeignKey(Connector, on_delete=models.CASCADE, related_name="+")
    environment = models.ForeignKey(
        Environment, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    is_deleted = models.BooleanField(default=False)
    acl_tokens = ArrayField(models.CharField(max_length=40), default=list, blank=True)

    class Meta:
        abstract = True


class Chunk(SearchFilterFields):
    """A retrievable passage of a document with its full-text vector.

    The table also has `bm25_weights` (sparsevec) and `bm25_norm`, the keyword lane's stored term
    weights (migration 0018). A trigger computes them from the row; the ORM never reads them.
    """

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    chunk_index = models.PositiveIntegerField()
    parent_index = models.PositiveIntegerField(null=True, blank=True)
    content = models.TextField()
    token_count = models.PositiveIntegerField(default=0)
    # The page (PDF) or slide (PPTX) the chunk starts on, for citations; null when the source has none.
    page = models.PositiveIntegerField(null=True, blank=True)
    language = models.CharField(max_length=32, default="english")
    search_vector = SearchVectorField(null=True, editable=False)
    lexeme_count = models.PositiveIntegerField(default=0, editable=False, help_text="Length for BM25.")

    class Meta:
        ordering = ["document_id", "chunk_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["document", "chunk_index"], name="chunk_unique_index_per_document"
            ),
        ]
        indexes = [
            GinIndex(fields=["search_vector"], name="chunk_search_vector_gin"),
            # The keyword lane's candidate index: lexemes prefixed with the tenant, so its scan needs
            # no other index and cannot be steered onto a tenant-wide scan by stale statistics. No
            # pending list: every search would scan it whole until a flush.
            GinIndex(
                Func(F("tenant"), F("search_vector"), function=TENANT_LEXEMES_FUNCTION),
                name="chunk_tenant_lexemes_gin",
                fastupdate=False,
            ),
            GinIndex(fields=["acl_tokens"], name="chunk_acl_tokens_gin"),
            models.Index(fields=["tenant", "connector", "is_deleted"], name="chunk_filter_btree"),
            # Lets the keyword lane list a tenant's languages with a few index probes.
            models.Index(
                fields=["tenant", "language"], name="chunk_tenant_language", condition=Q(is_deleted=False)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.chunk_index}"


class ChunkEmbedding(SearchFilterFields):
    """One chunk's vector from one embedding model; several dimensions coexist in one table.

    A model key ending in `@halfvec` (KNOWLEDGE_VECTOR_STORAGE=halfvec) keeps its vectors in
    `embedding_half`, at half the bytes; every other key in `embedding`. Exactly one is set.
    """

    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="embeddings")
    model = models.CharField(max_length=200)
    dimensions = models.PositiveIntegerField()
    embedding = VectorField(null=True, blank=True)
    embedding_half = HalfVectorField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["chunk", "model"], name="chunk_embedding_unique_model"),
            models.CheckConstraint(
                condition=models.Q(dimensions__gt=0, dimensions__lte=16000), name="chunk_embedding_dims_range"
            ),
            models.CheckConstraint(
                condition=(
                    Q(model__endswith="@halfvec", embedding__isnull=True, embedding_half__isnull=False)
                    | (
                        ~Q(model__endswith="@halfvec")
                        & Q(embedding__isnull=False, embedding_half__isnull=True)
                    )
                ),
                name="chunk_embedding_one_storage",
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "dimensions", "model"], name="chunk_embedding_filter"),
            # ACL tokens prefixed with the tenant (migration 0036): an exact scan finds exactly the
            # scope's visible rows of its tenant in one index, and ANALYZE keeps each tenant's own
            # token frequencies for the visibility estimate. No pending list, as the lexeme index.
            GinIndex(
                Func(F("tenant"), F("acl_tokens"), function=TENANT_TOKENS_FUNCTION),
                name="chunk_embedding_tenant_acl_gin",
                fastupdate=False,
            ),
        ]

    def __str__(self) -> str:
        return f"{self.chunk_id}:{self.model}/{self.dimensions}"

    def vector_values(self) -> list[float]:
        """The stored vector, whichever column holds it."""
        if self.embedding is not None:
            return [float(v) for v in self.embedding]
        half = self.embedding_half
        assert half is not None, "a vector row holds one of its two columns"
        return [float(v) for v in (half.to_list() if hasattr(half, "to_list") else half)]
