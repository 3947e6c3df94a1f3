"""What BM25 statistics scoped to the caller's visible chunks would cost, on SciFact: quality and latency.

Today the keyword lane's statistics (chunk count, average length, document frequencies) are the
tenant's, hidden chunks included. The alternative is to compute them over what the caller may see.
- **Quality.** SciFact's chunks are tokenised by PostgreSQL (their stored tsvectors); a random share of
  the documents (100 / 50 / 10 %) is made visible to one caller; each train question is ranked over
  the visible chunks with BM25 from the tenant's statistics and from the visible ones (k1 1.2, b 0.75,
  a document scores its best chunk), and nDCG@10 is taken against the judgements restricted to the
  visible documents (questions with no visible relevant document are left out).
- **Latency.** The statements per-caller statistics need (visible chunk count and length, and each
  question term's visible document frequency through the candidate index, under the ACL filter), timed
  against the keyword lane itself, on the same questions, interleaved.
Usage: python bench/keyword_statistics.py [--queries 300] [--seeds 3]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable as a script from anywhere
from bench.common import setup_django, summary  # noqa: E402
from bench.keyword_latency import SCIFACT, lane, load_corpus  # noqa: E402

K1, B = 1.2, 0.75
SHARES = (1.0, 0.5, 0.1)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=300, help="train questions for the latency part")
    parser.add_argument("--seeds", type=int, default=3, help="random visible sets per share")
    parser.add_argument("--beir", type=Path, default=SCIFACT)
    parser.add_argument("--database", default="knowledge_bench")
    return parser.parse_args()


Chunk = tuple[str, int, dict[str, int]]  # document id, length in lexemes, term frequencies


def chunk_terms(tenant_id: int) -> list[Chunk]:
    """Every chunk's document, length and term frequencies, from its stored tsvector."""
    from django.db import connection

    from knowledge.store.tables import CHUNK, DOCUMENT

    chunks: dict[int, Chunk] = {}
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT c.id, d.external_id, c.lexeme_count, (v).lexeme,
                      coalesce(array_length((v).positions, 1), 1)
               FROM {CHUNK} c JOIN {DOCUMENT} d ON d.id = c.document_id,
                    unnest(c.search_vector) AS v
               WHERE c.tenant_id = %s AND NOT c.is_deleted""",
            [tenant_id],
        )
        for chunk_id, doc, length, lexeme, tf in cursor.fetchall():
            chunks.setdefault(chunk_id, (doc, length, {}))[2][lexeme] = tf
    return list(chunks.values())


def query_terms(texts: Iterable[str]) -> list[list[str]]:
    from django.db import connection

    with connection.cursor() as cursor:
        out = []
        for text in texts:
            cursor.execute("SELECT lexeme FROM unnest(to_tsvector('english', %s))", [text])
            out.append([row[0] for row in cursor.fetchall()])
    return out


class Stats:
    def __init__(self, chunks: list[Chunk]) -> None:
        self.n = len(chunks)
        self.avgdl = sum(c[1] for c in chunks) / max(1, self.n)
        self.df: Counter[str] = Counter(term for c in chunks for term in c[2])

    def idf(self, term: str) -> float:
        df = self.df.get(term, 0)
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))


def rank(chunks: list[Chunk], index: Mapping[str, list[int]], terms: list[str], stats: Stats) -> list[str]:
    """Documents by their best chunk's BM25 score over `chunks` (postings in `index`), best first."""
    scores: dict[int, float] = defaultdict(float)
    for term in set(terms):
        idf = stats.idf(term)
        for i in index.get(term, ()):
            _, length, tfs = chunks[i]
            tf = tfs[term]
            scores[i] += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / stats.avgdl))
    best: dict[str, float] = {}
    for i, score in scores.items():
        doc = chunks[i][0]
        best[doc] = max(best.get(doc, 0.0), score)
    return sorted(best, key=lambda d: (-best[d], d))[:10]


def ndcg10(ranked: list[str], relevant: Mapping[str, int]) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(relevant.values(), reverse=True)[:10]))
    return dcg / ideal if ideal else 0.0


def train_judgements(root: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (root / "qrels" / "train.tsv").read_text().splitlines()[1:]:
        query, doc, grade = line.split("\t")
        if int(grade) > 0:
            qrels[query][doc] = int(grade)
    return qrels


def quality(root: Path, chunks: list[Chunk], seeds: int) -> dict[str, Any]:
    qrels = train_judgements(root)
    texts = {q["_id"]: q["text"] for q in map(json.loads, (root / "queries.jsonl").open())}
    ids = [q for q in qrels if q in texts]
    terms = dict(zip(ids, query_terms(texts[q] for q in ids), strict=True))
    tenant = Stats(chunks)
    documents = sorted({c[0] for c in chunks})
    figures: dict[str, Any] = {}
    for share in SHARES:
        rows = []
        for seed in range(seeds if share < 1 else 1):
            visible_docs = set(random.Random(seed).sample(documents, round(share * len(documents))))
            visible = [c for c in chunks if c[0] in visible_docs]
            index: dict[str, list[int]] = defaultdict(list)
            for i, c in enumerate(visible):
                for term in c[2]:
                    index[term].append(i)
            scoped = Stats(visible)
            pairs = []
            for q in ids:
                relevant = {d: g for d, g in qrels[q].items() if d in visible_docs}
                if relevant:
                    pairs.append(
                        (
                            ndcg10(rank(visible, index, terms[q], tenant), relevant),
                            ndcg10(rank(visible, index, terms[q], scoped), relevant),
                        )
                    )
            rows.append(
                (sum(p[0] for p in pairs) / len(pairs), sum(p[1] for p in pairs) / len(pairs), len(pairs))
            )
        figures[f"{share:.0%}"] = {
            "questions": rows[0][2],
            "tenant_statistics_ndcg10": round(sum(r[0] for r in rows) / len(rows), 4),
            "visible_statistics_ndcg10": round(sum(r[1] for r in rows) / len(rows), 4),
        }
    return figures


def visible_statistics(tenant_id: int, tokens: list[str]) -> Any:
    """The statements a per-caller BM25 would add: visible count and length, each term's visible df."""
    from django.db import connection

    from knowledge.models.documents import TENANT_LEXEMES_FUNCTION
    from knowledge.store.tables import CHUNK

    def run(query: str) -> Any:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT count(*), sum(lexeme_count) FROM {CHUNK} c"
                " WHERE c.tenant_id = %s AND NOT c.is_deleted AND c.acl_tokens && %s::varchar[]",
                [tenant_id, tokens],
            )
            cursor.execute(
                f"""SELECT q.lexeme,
                          (SELECT count(*) FROM {CHUNK} c
                           WHERE {TENANT_LEXEMES_FUNCTION}(c.tenant_id, c.search_vector)
                                 @@ (quote_literal(%s || ':' || q.lexeme))::tsquery
                             AND (NOT c.is_deleted AND c.acl_tokens && %s::varchar[]) IS TRUE)
                   FROM (SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', %s))) q""",
                [str(tenant_id), tokens, query],
            )
            return cursor.fetchall()

    return run


def latency(root: Path, tenant_id: int, count: int) -> dict[str, Any]:
    texts = [json.loads(line)["text"] for line in (root / "queries.jsonl").open()][: count + 20]
    paths = {
        "keyword_lane": lane(tenant_id, 50),
        "visible_statistics": visible_statistics(tenant_id, ["public"]),
    }
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for i, text in enumerate(texts):
        for name, path in paths.items():
            started = time.perf_counter()
            path(text)
            if i >= 20:  # warm-up
                samples[name].append((time.perf_counter() - started) * 1000)
    figures: dict[str, Any] = {name: summary(values) for name, values in samples.items()}
    figures["added_p50_ratio"] = round(
        figures["visible_statistics"]["p50_ms"] / figures["keyword_lane"]["p50_ms"], 2
    )
    return figures


def main() -> None:
    args = parse_args()
    setup_django(args.database)
    tenant_id = load_corpus(args.beir)
    chunks = chunk_terms(tenant_id)
    figures = {
        "chunks": len(chunks),
        "quality": quality(args.beir, chunks, args.seeds),
        "latency": latency(args.beir, tenant_id, args.queries),
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
