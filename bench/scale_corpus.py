"""bench/scale.py's corpus: many tenants generated with numpy and COPYed behind the write service.

Each tenant draws from its own seed, so a tenant rebuilt alone in another database is the same tenant.
Texts are Zipf words; vectors are a low-rank latent point per document projected to the tenant's
dimension (384, or 768 for every fourth tenant from the second) plus noise, as in
bench/search_latency.py. ACLs mix what real sources hand over: about a fifth of the documents are
public, most carry one or two of ten team groups (Zipf-popular), a fifth name one to three of a hundred
users; on top, the visibility groups `v100`/`v10`/`v1` are granted to 100/10/1 % of the documents, and
the measured scopes are those groups (so each visibility is exact).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

CHUNKS_PER_DOC, LATENT_DIMS, CHUNK_SPREAD, NOISE = 5, 12, 0.5, 0.15
VOCAB_SIZE, ZIPF_S, STOPWORD_RANKS = 20_000, 1.1, 100
VISIBILITY = {"100%": "v100", "10%": "v10", "1%": "v1"}
TEAMS, USERS = 10, 100
PUBLIC_SHARE, TEAM_SHARE, USER_SHARE = 0.2, 0.7, 0.2
DOCS_PER_BATCH = 2000
NOW = datetime.now(UTC)


def dimension_of(index: int) -> int:
    """The tenant's embedding dimension: 768 for every fourth tenant from the second, else 384."""
    return 768 if index % 4 == 1 else 384


def model_of(dimensions: int) -> str:
    return f"bench-random-{dimensions}"


@dataclass(frozen=True)
class Shared:
    """What every tenant draws from: one vocabulary with Zipf weights, one projection per dimension."""

    vocabulary: list[str]
    cumulative: np.ndarray
    projections: dict[int, np.ndarray]

    @classmethod
    def build(cls, seed: int) -> Shared:
        rng = np.random.default_rng(seed)
        syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
        words: set[str] = set()
        while len(words) < VOCAB_SIZE:
            picks = rng.integers(0, len(syllables), size=(VOCAB_SIZE, 4))
            lengths = rng.integers(2, 5, size=VOCAB_SIZE)
            words.update(
                "".join(syllables[i] for i in row[:n]) for row, n in zip(picks, lengths, strict=True)
            )
        vocabulary = sorted(words)[:VOCAB_SIZE]
        rng.shuffle(vocabulary)
        weights = 1.0 / np.arange(1, VOCAB_SIZE + 1) ** ZIPF_S
        projections = {d: rng.normal(size=(LATENT_DIMS, d)) for d in (384, 768)}
        return cls(vocabulary, np.cumsum(weights) / weights.sum(), projections)

    def words(self, rng: np.random.Generator, count: int, *, skip: int = 0) -> np.ndarray:
        """`count` Zipf-drawn word ranks at or after rank `skip`."""
        low = self.cumulative[skip - 1] if skip else 0.0
        return np.searchsorted(self.cumulative, rng.uniform(low, 1.0, size=count)).clip(0, VOCAB_SIZE - 1)

    def query_text(self, rng: np.random.Generator) -> str:
        """3-8 words below the stop-word-like ranks."""
        return " ".join(
            self.vocabulary[i] for i in self.words(rng, int(rng.integers(3, 9)), skip=STOPWORD_RANKS)
        )


@dataclass(frozen=True)
class Batch:
    """A slice of one tenant's documents: ids, ACL tokens by kind, chunk texts and vectors."""

    doc_ids: np.ndarray  # (documents,)
    acls: list[list[str]]  # per document: principal names (`public`, `team-3`, `user-17`, `v10`, ...)
    chunk_ids: np.ndarray  # (chunks,)
    chunk_docs: np.ndarray  # (chunks,) index into doc_ids
    texts: list[str]
    vectors: np.ndarray  # (chunks, dimensions) float32, unit length


def document_acl(rng: np.random.Generator) -> list[str]:
    names = ["v100"]
    if rng.random() < 0.10:
        names.append("v10")
    if rng.random() < 0.01:
        names.append("v1")
    if rng.random() < PUBLIC_SHARE:
        names.append("public")
    if rng.random() < TEAM_SHARE:  # one or two teams, the first few far more often
        teams = np.minimum(rng.zipf(1.6, size=int(rng.integers(1, 3))), TEAMS) - 1
        names.extend(f"team-{t}" for t in sorted(set(teams.tolist())))
    if rng.random() < USER_SHARE:
        users = rng.choice(USERS, size=int(rng.integers(1, 4)), replace=False)
        names.extend(f"user-{u}" for u in sorted(users.tolist()))
    return names


def principal_names() -> list[tuple[str, str, bool]]:
    """Every tenant's principals: (name in the ACLs above, external id, is_user)."""
    groups = [*VISIBILITY.values(), *(f"team-{t}" for t in range(TEAMS))]
    users = [(f"user-{u}", f"user-{u}@bench.example", True) for u in range(USERS)]
    return [(g, g, False) for g in groups] + users


def batches(shared: Shared, seed: int, size: int, first_doc: int, dimensions: int) -> Iterator[Batch]:
    """One tenant's `size` chunks, in document batches; chunk ids continue the documents' numbering."""
    rng = np.random.default_rng(seed)
    documents = math.ceil(size / CHUNKS_PER_DOC)
    last_chunk = first_doc * CHUNKS_PER_DOC + size
    projection = shared.projections[dimensions]
    for start in range(first_doc, first_doc + documents, DOCS_PER_BATCH):
        doc_ids = np.arange(start + 1, min(first_doc + documents, start + DOCS_PER_BATCH) + 1)
        acls = [document_acl(rng) for _ in doc_ids]
        chunk_ids = ((doc_ids[:, None] - 1) * CHUNKS_PER_DOC + np.arange(1, CHUNKS_PER_DOC + 1)).ravel()
        chunk_docs = np.repeat(np.arange(len(doc_ids)), CHUNKS_PER_DOC)
        keep = chunk_ids <= last_chunk
        chunk_ids, chunk_docs = chunk_ids[keep], chunk_docs[keep]
        latent = rng.normal(size=(len(doc_ids), LATENT_DIMS))[chunk_docs]
        latent += rng.normal(scale=CHUNK_SPREAD, size=latent.shape)
        vectors = latent @ projection
        vectors += rng.normal(scale=NOISE * math.sqrt(LATENT_DIMS / dimensions), size=vectors.shape)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        yield Batch(doc_ids, acls, chunk_ids, chunk_docs, _texts(shared, rng, len(chunk_ids)),
                    vectors.astype(np.float32))  # fmt: skip


def _texts(shared: Shared, rng: np.random.Generator, count: int) -> list[str]:
    lengths = rng.integers(40, 121, size=count)
    ranks = shared.words(rng, int(lengths.sum()))
    words = [shared.vocabulary[i] for i in ranks.tolist()]
    ends = np.cumsum(lengths).tolist()
    return [" ".join(words[s:e]) for s, e in zip([0, *ends[:-1]], ends, strict=True)]


# --- COPY ------------------------------------------------------------------------------------------------
DOCUMENT_COLUMNS = (
    "id, external_id, title, source_url, content_hash, content, metadata, language, is_public, "
    "source_is_public, acl_origin, acl_override_by, deletion_origin, created_at, updated_at, tenant_id, "
    "connector_id"
)


def copy_batch(cursor: Any, owner: tuple[int, int], batch: Batch, principals: dict[str, int],
               dimensions: int) -> None:  # fmt: skip
    """COPY one batch: documents and their grants, chunks to the staging table, vectors (binary)."""
    from pgvector import Vector

    tenant_id, connector_id = owner
    tokens = [[_token(name, principals) for name in acl] for acl in batch.acls]
    grants = [(int(d), principals[n]) for d, acl in zip(batch.doc_ids, batch.acls, strict=True)
              for n in acl if n != "public"]  # fmt: skip
    with cursor.copy(f"COPY knowledge_document ({DOCUMENT_COLUMNS}) FROM STDIN") as copy:
        for doc_id, acl in zip(batch.doc_ids.tolist(), batch.acls, strict=True):
            public = "public" in acl
            digest = hashlib.sha256(f"doc-{doc_id}".encode()).hexdigest()
            copy.write_row((doc_id, f"doc-{doc_id}", f"Document {doc_id}", f"https://bench.example/{doc_id}",
                            digest, "", "{}", "english", public, public, "request", "", "", "now", "now",
                            tenant_id, connector_id))  # fmt: skip
    for table in ("knowledge_document_allowed_principals", "knowledge_document_source_principals"):
        with cursor.copy(f"COPY {table} (document_id, principal_id) FROM STDIN") as copy:
            for row in grants:
                copy.write_row(row)
    with cursor.copy("COPY bench_chunk (id, document_id, chunk_index, content, acl) FROM STDIN") as copy:
        for chunk_id, doc, text in zip(batch.chunk_ids.tolist(), batch.chunk_docs.tolist(), batch.texts,
                                       strict=True):  # fmt: skip
            copy.write_row(
                (chunk_id, int(batch.doc_ids[doc]), (chunk_id - 1) % CHUNKS_PER_DOC, text, tokens[doc])
            )
    model = model_of(dimensions)
    with cursor.copy(
        "COPY knowledge_chunkembedding (id, chunk_id, embedding, acl_tokens, model, dimensions, created_at, "
        "tenant_id, connector_id, is_deleted) FROM STDIN WITH (FORMAT BINARY)"
    ) as copy:
        copy.set_types(["int8", "int8", "vector", "varchar[]", "varchar", "int4", "timestamptz", "int8",
                        "int8", "bool"])  # fmt: skip
        for chunk_id, doc, vector in zip(batch.chunk_ids.tolist(), batch.chunk_docs.tolist(), batch.vectors,
                                         strict=True):  # fmt: skip
            copy.write_row((chunk_id, chunk_id, Vector(vector), tokens[doc], model, dimensions, NOW,
                            tenant_id, connector_id, False))  # fmt: skip


def _token(name: str, principals: dict[str, int]) -> str:
    if name == "public":
        return "public"
    return f"u:{principals[name]}" if name.startswith("user-") else f"g:{principals[name]}"


# --- chunks ----------------------------------------------------------------------------------------------
# The staged chunks go in with one INSERT, as the write service's own (INSERT_CHUNKS): the row trigger
# computes each chunk's BM25 weights and the statement trigger counts terms and lengths. Term rows and
# the tenant's final statistics are put in first, so the weights are computed once, against the final
# average length, instead of again by a statistics rebuild (which rewrote every chunk: 22 s of a 20,000-
# chunk load). The statistics row is then set from the chunks (the trigger had added them a second time).
CHUNK_STEPS = [
    # OFFSET 0 keeps to_tsvector from being inlined into (and run again by) the length expression.
    "CREATE TEMP TABLE bench_tsv ON COMMIT DROP AS "
    "SELECT id, tsv, coalesce((SELECT sum(array_length(positions, 1)) FROM unnest(tsv)), 0) AS length "
    "FROM (SELECT id, to_tsvector('english', content) AS tsv FROM bench_chunk OFFSET 0) v",
    "INSERT INTO knowledge_keywordterm (tenant_id, language, lexeme, df) "
    "SELECT DISTINCT %(tenant)s::bigint, 'english', l.lexeme, 0 "
    "FROM bench_tsv, unnest(tsvector_to_array(tsv)) AS l(lexeme) ORDER BY 3 "
    "ON CONFLICT (tenant_id, language, lexeme) DO NOTHING",
    "INSERT INTO knowledge_keywordstatistics (tenant_id, language, chunk_count, total_length) "
    "SELECT %(tenant)s, 'english', count(*), sum(length) FROM bench_tsv",
    "INSERT INTO knowledge_chunk (id, document_id, chunk_index, content, token_count, language, "
    "search_vector, lexeme_count, tenant_id, connector_id, environment_id, is_deleted, acl_tokens) "
    "SELECT b.id, b.document_id, b.chunk_index, b.content, 0, 'english', t.tsv, t.length, %(tenant)s, "
    "%(connector)s, NULL, false, b.acl FROM bench_chunk b JOIN bench_tsv t USING (id)",
    "UPDATE knowledge_keywordstatistics s SET chunk_count = t.n, total_length = t.total "
    "FROM (SELECT count(*) AS n, sum(length) AS total FROM bench_tsv) t "
    "WHERE s.tenant_id = %(tenant)s AND s.language = 'english'",
    "DROP TABLE bench_tsv",
    "TRUNCATE bench_chunk",
]


ANALYZE_TERMS = "ANALYZE knowledge_keywordterm, knowledge_keywordstatistics"


@dataclass
class TermsAnalyzed:
    """Term rows at the last ANALYZE: the weights trigger looks up every lexeme of every chunk, and
    needs the planner to know the table is no longer empty; again each time it has doubled (an
    ANALYZE per tenant cost about 0.5 s each, a minute and a half of a 200-tenant load)."""

    rows: int = 0
    analyzed_at: int = -1


def insert_chunks(cursor: Any, tenant_id: int, connector_id: int, terms: TermsAnalyzed) -> None:
    """The staged chunks (`bench_chunk`) into the chunk table, with terms, statistics and weights."""
    for index, sql in enumerate(CHUNK_STEPS):
        cursor.execute(sql, {"tenant": tenant_id, "connector": connector_id})
        if index == 1:  # the term rows
            terms.rows += max(cursor.rowcount, 0)
        if index == 2 and terms.rows > 2 * max(terms.analyzed_at, 0):
            cursor.execute(ANALYZE_TERMS)
            terms.analyzed_at = terms.rows
