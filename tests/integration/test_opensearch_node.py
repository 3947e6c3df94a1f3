"""Integration test against a real OpenSearch 2.19 node with the k-NN plugin.

Start the node with ``scripts/opensearch.sh up`` (or point ``OPENSEARCH_URL`` at
one).  Only ``opensearch-py`` and pytest are used: no Django, no database.

If the node is not reachable the tests are skipped, unless
``OPENSEARCH_REQUIRED`` is set to a non-empty value other than ``0``, in which
case they fail (use that in CI once the node is started there).

What is checked:

* k-NN (lucene engine, HNSW, cosine) with an *efficient* filter inside the
  ``knn`` clause: the top hit and recall@10 against a brute-force cosine top-k
  over the allowed documents only, and that no filtered-out document is ever
  returned, even when the query vector is (nearly) a filtered-out document's.
* BM25 ``multi_match`` inside a ``bool`` with the same filters as ``filter``
  clauses: the english analyzer stems "runs"/"running" to "run", and matching
  documents of another tenant, another environment or without a matching ACL
  token never come back.
"""

from __future__ import annotations

import math
import os
import random
import uuid

import pytest
from opensearchpy import OpenSearch
from opensearchpy.helpers import bulk

pytestmark = pytest.mark.opensearch

OPENSEARCH_URL = os.environ.get("OPENSEARCH_URL", "http://127.0.0.1:9200")

DIM = 16
N_RANDOM_DOCS = 400
SEED = 20240611

TENANTS = ["acme", "globex"]
ENVIRONMENTS = ["prod", "staging"]
CONNECTORS = ["confluence", "slack", "gdrive"]
ACL_TOKENS = ["group:eng", "group:sales", "user:alice", "user:bob", "public"]

# The "caller" of every query below: tenant acme, prod, member of group:eng and
# user alice.  A document is visible iff all three conditions hold.
Q_TENANT = "acme"
Q_ENVIRONMENT = "prod"
Q_ACL = ["group:eng", "user:alice"]

# Filler vocabulary.  None of these words stems to "run" (nor to another word
# of the list) with the english analyzer.
VOCAB = [
    "alpha",
    "budget",
    "roadmap",
    "incident",
    "meeting",
    "quarterly",
    "report",
    "customer",
    "invoice",
    "deploy",
    "server",
    "backup",
    "policy",
    "holiday",
    "travel",
    "expense",
    "hiring",
    "review",
    "design",
    "database",
    "network",
    "security",
    "laptop",
    "printer",
    "coffee",
    "office",
    "contract",
    "vendor",
]


def _visible(doc: dict) -> bool:
    return (
        doc["tenant"] == Q_TENANT
        and doc["environment"] == Q_ENVIRONMENT
        and any(t in Q_ACL for t in doc["acl_tokens"])
    )


def _filter_clauses() -> list[dict]:
    return [
        {"term": {"tenant": Q_TENANT}},
        {"term": {"environment": Q_ENVIRONMENT}},
        {"terms": {"acl_tokens": Q_ACL}},
    ]


def _unit(v: list[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def _make_docs() -> dict[str, dict]:
    rng = random.Random(SEED)
    docs: dict[str, dict] = {}
    for i in range(N_RANDOM_DOCS):
        docs[f"doc-{i:04d}"] = {
            "tenant": rng.choice(TENANTS),
            "environment": rng.choice(ENVIRONMENTS),
            "connector": rng.choice(CONNECTORS),
            "acl_tokens": rng.sample(ACL_TOKENS, rng.randint(1, 2)),
            "text": " ".join(rng.choice(VOCAB) for _ in range(12)),
            "embedding": [rng.gauss(0.0, 1.0) for _ in range(DIM)],
        }

    def special(text: str, tenant: str, environment: str, acl: list[str]) -> dict:
        return {
            "tenant": tenant,
            "environment": environment,
            "connector": "confluence",
            "acl_tokens": acl,
            "text": text,
            "embedding": [rng.gauss(0.0, 1.0) for _ in range(DIM)],
        }

    # Documents about running: two visible ones, and three that contain the
    # term but must be filtered out for three different reasons.
    docs["run-visible-1"] = special(
        "the deploy pipeline keeps running after the incident", "acme", "prod", ["group:eng"]
    )
    docs["run-visible-2"] = special(
        "alice runs the quarterly budget review", "acme", "prod", ["user:alice", "group:sales"]
    )
    docs["run-other-tenant"] = special(
        "running the backup server every night", "globex", "prod", ["group:eng", "user:alice"]
    )
    docs["run-other-acl"] = special(
        "bob is running the hiring review", "acme", "prod", ["group:sales", "user:bob"]
    )
    docs["run-other-env"] = special("the staging database runs out of disk", "acme", "staging", ["group:eng"])
    return docs


DOCS = _make_docs()
VISIBLE_IDS = {doc_id for doc_id, d in DOCS.items() if _visible(d)}
HIDDEN_IDS = set(DOCS) - VISIBLE_IDS
RUN_VISIBLE = {"run-visible-1", "run-visible-2"}
RUN_HIDDEN = {"run-other-tenant", "run-other-acl", "run-other-env"}


def _brute_force_top(query: list[float], k: int, ids: set[str]) -> list[tuple[str, float]]:
    scored = [(doc_id, _cosine(query, DOCS[doc_id]["embedding"])) for doc_id in ids]
    scored.sort(key=lambda t: (-t[1], t[0]))
    return scored[:k]


@pytest.fixture(scope="module")
def client() -> OpenSearch:
    user, password = os.environ.get("OPENSEARCH_USERNAME"), os.environ.get("OPENSEARCH_PASSWORD")
    c = OpenSearch(
        hosts=[OPENSEARCH_URL],
        timeout=30,
        http_auth=(user, password) if user else None,
        ca_certs=os.environ.get("OPENSEARCH_CA_CERTS") or None,
    )
    try:
        c.cluster.health(wait_for_status="yellow", request_timeout=15)
    except Exception as exc:  # noqa: BLE001 - any connection problem
        msg = f"OpenSearch not reachable at {OPENSEARCH_URL} ({exc!r}); run scripts/opensearch.sh up"
        if os.environ.get("OPENSEARCH_REQUIRED", "") not in ("", "0"):
            pytest.fail(msg)
        pytest.skip(msg)
    return c


@pytest.fixture(scope="module")
def index(client: OpenSearch):
    name = f"test-knn-{uuid.uuid4().hex[:12]}"
    client.indices.create(
        index=name,
        body={
            "settings": {
                "index.knn": True,
                "number_of_shards": 1,
                "number_of_replicas": 0,
            },
            "mappings": {
                "properties": {
                    "embedding": {
                        "type": "knn_vector",
                        "dimension": DIM,
                        "method": {
                            "name": "hnsw",
                            "engine": "lucene",
                            "space_type": "cosinesimil",
                            "parameters": {"m": 16, "ef_construction": 128},
                        },
                    },
                    "acl_tokens": {"type": "keyword"},
                    "tenant": {"type": "keyword"},
                    "connector": {"type": "keyword"},
                    "environment": {"type": "keyword"},
                    "text": {"type": "text", "analyzer": "english"},
                }
            },
        },
    )
    try:
        ok, errors = bulk(
            client,
            ({"_index": name, "_id": doc_id, "_source": doc} for doc_id, doc in DOCS.items()),
            refresh=False,
            raise_on_error=False,
        )
        assert not errors, errors[:3]
        assert ok == len(DOCS)
        client.indices.refresh(index=name)
        assert client.count(index=name)["count"] == len(DOCS)
        yield name
    finally:
        client.indices.delete(index=name, ignore_unavailable=True)


def _knn(client: OpenSearch, index: str, vector: list[float], k: int, filtered: bool = True) -> list[dict]:
    clause: dict = {"vector": vector, "k": k}
    if filtered:
        clause["filter"] = {"bool": {"filter": _filter_clauses()}}
    resp = client.search(
        index=index,
        body={"size": k, "_source": False, "query": {"knn": {"embedding": clause}}},
    )
    return resp["hits"]["hits"]


def test_fixture_data_is_meaningful():
    # Enough visible and hidden docs for the assertions below to mean something.
    assert 30 <= len(VISIBLE_IDS) <= 150, len(VISIBLE_IDS)
    assert len(HIDDEN_IDS) >= 200
    assert RUN_VISIBLE <= VISIBLE_IDS
    assert not (RUN_HIDDEN & VISIBLE_IDS)
    # each filter dimension alone excludes something
    assert any(d["tenant"] != Q_TENANT for d in DOCS.values())
    assert any(d["environment"] != Q_ENVIRONMENT for d in DOCS.values())
    assert any(not set(d["acl_tokens"]) & set(Q_ACL) for d in DOCS.values())


def test_english_analyzer_stems(client: OpenSearch, index: str):
    resp = client.indices.analyze(index=index, body={"field": "text", "text": "Running runs"})
    assert [t["token"] for t in resp["tokens"]] == ["run", "run"]


def test_knn_with_efficient_filter_returns_nearest_allowed_docs(client: OpenSearch, index: str):
    rng = random.Random(SEED + 1)
    hidden_sorted = sorted(HIDDEN_IDS)
    queries: list[list[float]] = []
    # Queries that sit right on top of hidden documents: unfiltered, the hidden
    # doc is the nearest neighbour, so a broken filter cannot go unnoticed.
    for doc_id in rng.sample(hidden_sorted, 5):
        base = DOCS[doc_id]["embedding"]
        queries.append([x + rng.gauss(0.0, 0.01) for x in base])
    # Plus random directions.
    queries += [[rng.gauss(0.0, 1.0) for _ in range(DIM)] for _ in range(5)]

    k = 10
    recalls = []
    for qi, query in enumerate(queries):
        if qi < 5:
            # sanity: without the filter the nearest doc is a hidden one
            unfiltered = _knn(client, index, query, k, filtered=False)
            assert unfiltered[0]["_id"] in HIDDEN_IDS, (qi, unfiltered[0])

        hits = _knn(client, index, query, k)
        got = [h["_id"] for h in hits]
        leaked = set(got) - VISIBLE_IDS
        assert not leaked, f"query {qi}: filtered-out docs returned: {sorted(leaked)}"
        assert len(got) == k, (qi, got)

        expected = _brute_force_top(query, k, VISIBLE_IDS)
        assert got[0] == expected[0][0], (qi, got, expected)
        # lucene cosinesimil score = (1 + cos) / 2
        assert hits[0]["_score"] == pytest.approx((1.0 + expected[0][1]) / 2.0, abs=1e-3)
        recall = len(set(got) & {doc_id for doc_id, _ in expected}) / k
        recalls.append(recall)
        assert recall >= 0.9, (qi, recall, got, expected)
    assert sum(recalls) / len(recalls) >= 0.95, recalls


def test_knn_with_k_larger_than_allowed_set_returns_only_allowed(client: OpenSearch, index: str):
    query = [1.0] * DIM
    k = len(VISIBLE_IDS) + 50
    hits = _knn(client, index, query, k)
    got = {h["_id"] for h in hits}
    assert got <= VISIBLE_IDS, sorted(got - VISIBLE_IDS)
    # the filter is applied before the top-k (efficient filtering), so every
    # allowed doc comes back rather than "top-k then filter" leaving gaps
    assert got == VISIBLE_IDS, sorted(VISIBLE_IDS - got)


def _bm25(client: OpenSearch, index: str, text: str, filtered: bool = True, size: int = 100) -> list[dict]:
    query: dict = {
        "bool": {
            "must": [{"multi_match": {"query": text, "fields": ["text"]}}],
        }
    }
    if filtered:
        query["bool"]["filter"] = _filter_clauses()
    resp = client.search(index=index, body={"size": size, "_source": False, "query": query})
    return resp["hits"]["hits"]


def test_bm25_multi_match_with_filters_uses_stemming_and_hides_other_docs(client: OpenSearch, index: str):
    # sanity: without filters every doc about running matches "runs"
    unfiltered = {h["_id"] for h in _bm25(client, index, "runs", filtered=False)}
    assert unfiltered == RUN_VISIBLE | RUN_HIDDEN, unfiltered

    got = {h["_id"] for h in _bm25(client, index, "runs")}
    # "running" (run-visible-1) matches "runs" thanks to the english analyzer
    assert got == RUN_VISIBLE, got
    for hidden in RUN_HIDDEN:
        assert hidden not in got


def test_bm25_common_word_returns_exactly_the_visible_docs_containing_it(client: OpenSearch, index: str):
    word = "budget"
    with_word = {doc_id for doc_id, d in DOCS.items() if word in d["text"].split()}
    expected = with_word & VISIBLE_IDS
    assert expected and (with_word - VISIBLE_IDS), "fixture data should have both kinds"

    hits = _bm25(client, index, word, size=len(DOCS))
    got = {h["_id"] for h in hits}
    assert got == expected, (sorted(got - expected), sorted(expected - got))
    scores = [h["_score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0
