"""The keyword lane's stored weights and bounds: they speed it up and never change its answer.

The property compares the lane with a reference that scores every candidate exactly (the lane's own
candidate rule, no bounds): same chunks, same order, same scores, bit for bit. The corpora make the
bounds work hard: chunks written before the average length moved (a second batch of longer chunks,
soft deletes), settings other than the weights' k1 = 1.2 and b = 0.75, chunks with no weights (more
distinct lexemes than a row keeps), private chunks, duplicates that tie.
Examples: 25 by default, more with BM25_BOUND_EXAMPLES=<n>.
"""

from __future__ import annotations

import itertools
import os
import random
import re
import struct
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge.models import Tenant
from knowledge.store.chunks import insert_chunks
from knowledge.store.search.bm25 import (
    BM25_SQL,
    EXACT_SCORE,
    STORED_B,
    STORED_K1,
    BM25Params,
    _named_filter,
    bm25_search,
    statement_args,
)
from retrieval_backends.types import ChunkInput, SearchScope
from tests.factories import DocumentFactory

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("BM25_BOUND_EXAMPLES", "25"))
VOCABULARY = [f"t{i:02d}" for i in range(40)]
ZIPF = [1 / (rank + 1) for rank in range(len(VOCABULARY))]
_tenant_numbers = itertools.count()
WIDE = 520  # distinct lexemes in a chunk that gets no weights (the row keeps at most 500)

# Every candidate of the lane's probe scored exactly (the lane's own expression), as the lane did before
# it had bounds.
REFERENCE_SQL = (
    BM25_SQL[: BM25_SQL.index("bounds AS MATERIALIZED")]
    + """scored AS MATERIALIZED (
    SELECT c.id, c.document_id, c.chunk_index, c.tenant_id, c.parent_index, """
    + EXACT_SCORE
    + """ AS score
    FROM probe p
    JOIN knowledge_chunk c ON knowledge_tenant_lexemes(c.tenant_id, c.search_vector) @@ p.tsq
    WHERE (c.language = p.language AND {where}) IS TRUE
    ORDER BY score DESC, c.id
    LIMIT %(limit)s
)
SELECT id, score FROM scored ORDER BY score DESC, id
"""
)


def scope_for(tenant_id: int) -> SearchScope:
    return SearchScope(tenant_id=tenant_id, principal_tokens=frozenset({"public"}))


def reference(scope: SearchScope, query: str, limit: int, params: BM25Params) -> list[tuple[int, float]]:
    where, filter_params = _named_filter(scope)
    args = statement_args(scope.tenant_id, query, ["simple"], limit, params) | filter_params
    with connection.cursor() as cursor:
        cursor.execute(REFERENCE_SQL.replace("{where}", where), args)
        return [(int(i), float(s)) for i, s in cursor.fetchall()]


def lane(scope: SearchScope, query: str, limit: int, params: BM25Params) -> list[tuple[int, float]]:
    hits = bm25_search(scope, query, ["simple"], limit, params=params, timeout_ms=5000)
    return [(h.chunk_id, h.score) for h in hits]


def write(document: Any, texts: list[str], private: set[int], start: int) -> list[int]:
    stored = insert_chunks(
        [
            ChunkInput(
                document_id=document.pk,
                chunk_index=start + i,
                content=text,
                language="simple",
                tenant_id=document.tenant_id,
                connector_id=document.connector_id,
                acl_tokens=("group:x",) if start + i in private else ("public",),
            )
            for i, text in enumerate(texts)
        ]
    )
    return [c.id for c in stored]


def stored_weights(chunk_id: int) -> tuple[float | None, dict[int, float]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT bm25_norm, bm25_weights::text FROM knowledge_chunk WHERE id = %s", [chunk_id])
        norm, text = cursor.fetchone()
    if text is None:
        return norm, {}
    pairs = re.fullmatch(r"\{(.*)\}/\d+", text).group(1)  # type: ignore[union-attr]
    items = (pair.split(":") for pair in pairs.split(",") if pair)
    return float32(norm), {int(k): float32(float(v)) for k, v in items}


def term_ids(tenant_id: int) -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT lexeme, term_id FROM knowledge_keywordterm WHERE tenant_id = %s", [tenant_id])
        return dict(cursor.fetchall())


def avgdl(tenant_id: int) -> float:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT total_length::float8 / chunk_count FROM knowledge_keywordstatistics "
            "WHERE tenant_id = %s AND language = 'simple'",
            [tenant_id],
        )
        return float(cursor.fetchone()[0])


def float32(value: float) -> float:
    """The float4 nearest `value` (PostgreSQL sends a real as its shortest decimal)."""
    return float(struct.unpack("f", struct.pack("f", value))[0])


def test_each_chunk_keeps_its_bm25_term_weights() -> None:
    document = DocumentFactory.create(is_public=True)
    [first] = write(document, ["apple banana apple"], set(), 0)
    [second] = write(document, ["banana cherry date elder fig grape"], set(), 1)
    ids = term_ids(document.tenant_id)
    norm, weights = stored_weights(first)
    # No statistics yet when it was written: its own length stands for the average.
    assert norm == float32(1 + STORED_K1 * (1 - STORED_B + STORED_B * 3 / 3))
    assert weights == {
        ids["apple"]: float32(2 * 2.2 / (2 + norm - 1)),
        ids["banana"]: float32(1 * 2.2 / (1 + norm - 1)),
    }
    norm, weights = stored_weights(second)
    assert norm == float32(1 + STORED_K1 * (1 - STORED_B + STORED_B * 6 / 3))  # against avgdl 3 then
    assert set(weights) == {ids[w] for w in ("banana", "cherry", "date", "elder", "fig", "grape")}


def test_an_acl_change_keeps_the_weights_and_a_rebuild_refreshes_them() -> None:
    document = DocumentFactory.create(is_public=True)
    [first] = write(document, ["apple banana apple"], set(), 0)
    write(document, ["banana cherry date elder fig grape"], set(), 1)
    before, ids = stored_weights(first), term_ids(document.tenant_id)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE knowledge_chunk SET acl_tokens = '{group:x}' WHERE id = %s", [first])
    assert stored_weights(first) == before  # not recomputed against the new average
    call_command("rebuild_keyword_statistics", stdout=open(os.devnull, "w"))  # noqa: SIM115
    assert term_ids(document.tenant_id) == ids  # the numbers in the weights stay valid
    norm, _ = stored_weights(first)
    assert norm == float32(1 + STORED_K1 * (1 - STORED_B + STORED_B * 3 / avgdl(document.tenant_id)))


def test_a_chunk_with_more_lexemes_than_a_row_keeps_is_scored_exactly() -> None:
    document = DocumentFactory.create(is_public=True)
    wide = " ".join(f"x{i:03d}" for i in range(WIDE)) + " apple"
    ids = write(document, [wide, "apple banana", "apple apple cherry"], set(), 0)
    assert stored_weights(ids[0]) == (None, {})
    scope, params = scope_for(document.tenant_id), BM25Params()
    got = lane(scope, "apple x007", 10, params)
    assert got == reference(scope, "apple x007", 10, params)
    assert got[0][0] == ids[0]  # the only chunk with the rare term, found and ranked first


def test_the_weights_stay_in_the_row_uncompressed() -> None:
    document = DocumentFactory.create(is_public=True)
    long_text = " ".join(random.Random(3).choices(VOCABULARY + [f"z{i}" for i in range(400)], k=700))
    [chunk] = write(document, [long_text], set(), 0)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_compression(bm25_weights), pg_column_toast_chunk_id(bm25_weights), "
            "pg_column_size(bm25_weights), pg_column_size(c.*) FROM knowledge_chunk c WHERE id = %s",
            [chunk],
        )
        compression, toast, size, row_size = cursor.fetchone()
    assert row_size > 2100 and size > 1000  # past the TOAST target, with weights worth compressing
    assert (compression, toast) == (None, None)


@st.composite
def corpora(draw: Any) -> dict[str, Any]:
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    early = [rng.randint(1, 10) for _ in range(draw(st.integers(1, 25)))]
    later = [rng.randint(5, 80) for _ in range(draw(st.integers(0, 25)))]

    def text(length: int) -> str:
        return " ".join(rng.choices(VOCABULARY, ZIPF, k=length))

    first, second = [text(n) for n in early], [text(n) for n in later]
    if second and draw(st.booleans()):
        second += second[: rng.randint(1, len(second))]  # duplicates tie
    if draw(st.booleans()):
        second.append(" ".join(f"x{i:03d}" for i in range(WIDE)) + " " + text(5))
    count = len(first) + len(second)
    return {
        "first": first,
        "second": second,
        "private": {i for i in range(count) if rng.random() < 0.2},
        "deleted": {i for i in range(count) if rng.random() < 0.15},
        "queries": [" ".join(rng.sample(VOCABULARY, rng.randint(1, 8))) + " x005" for _ in range(3)],
        "limit": draw(st.sampled_from([1, 3, 10, 50])),
        "params": BM25Params(
            k1=draw(st.sampled_from([STORED_K1, 0.3, 2.5])),
            b=draw(st.sampled_from([STORED_B, 0.0, 1.0, 0.4])),
            candidate_budget=draw(st.sampled_from([500, 5])),
        ),
    }


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(corpus=corpora())
def test_bounds_never_change_the_answer(corpus: dict[str, Any]) -> None:
    tenant = Tenant.objects.create(slug=f"bounds-{next(_tenant_numbers)}", name="bounds")
    document = DocumentFactory.create(connector__tenant=tenant, is_public=True)
    ids = write(document, corpus["first"], corpus["private"], 0)
    ids += write(document, corpus["second"], corpus["private"], len(ids))
    deleted = [ids[i] for i in corpus["deleted"]]
    with connection.cursor() as cursor:
        cursor.execute("UPDATE knowledge_chunk SET is_deleted = true WHERE id = ANY(%s)", [deleted])
    scope, limit, params = scope_for(tenant.pk), corpus["limit"], corpus["params"]
    for query in corpus["queries"]:
        assert lane(scope, query, limit, params) == reference(scope, query, limit, params)
