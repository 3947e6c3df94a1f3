"""Ranking metrics with trec_eval conventions: Recall@k, MRR@k and nDCG@k with linear gain (ndcg_cut).

A document is relevant when its grade is above 0. nDCG's gain is the grade itself (trec_eval's
`ndcg_cut`, not the 2^grade − 1 "Burges" variant), discounted by log2(rank + 1); the ideal DCG ranks all
judged relevant documents of the query by grade. Queries without any relevant document are skipped, as
trec_eval does; a query that retrieved nothing scores 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Sequence[str]]


def dedupe(ids: Iterable[str]) -> list[str]:
    """Keep the first occurrence of each id (chunks → documents), in order."""
    return list(dict.fromkeys(ids))


def rank_by_score(scores: Mapping[str, float]) -> list[str]:
    """Ids by descending score, ties broken by ascending id, so rankings are deterministic."""
    return sorted(scores, key=lambda doc: (-scores[doc], doc))


def _relevant(judged: Mapping[str, int]) -> dict[str, int]:
    return {doc: grade for doc, grade in judged.items() if grade > 0}


def recall_at(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    relevant = _relevant(judged)
    if not relevant:
        return 0.0
    return sum(1 for doc in ranked[:k] if doc in relevant) / len(relevant)


def reciprocal_rank_at(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    relevant = _relevant(judged)
    for rank, doc in enumerate(ranked[:k], start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def _dcg(gains: Iterable[int]) -> float:
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


def ndcg_at(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    relevant = _relevant(judged)
    ideal = _dcg(sorted(relevant.values(), reverse=True)[:k])
    if ideal == 0.0:
        return 0.0
    return _dcg(relevant.get(doc, 0) for doc in ranked[:k]) / ideal


@dataclass(frozen=True)
class MetricSet:
    """Which cut-offs to compute: Recall@k and nDCG@k for each k, and MRR at `mrr_k`."""

    ks: tuple[int, ...] = (1, 5, 10, 100)
    mrr_k: int = 10

    def names(self) -> list[str]:
        return [
            *(f"recall@{k}" for k in self.ks),
            f"mrr@{self.mrr_k}",
            *(f"ndcg@{k}" for k in self.ks),
        ]


def per_query(ranked: Sequence[str], judged: Mapping[str, int], metrics: MetricSet) -> dict[str, float]:
    """Every metric of one query; `ranked` must already be deduplicated."""
    scores = {f"recall@{k}": recall_at(ranked, judged, k) for k in metrics.ks}
    scores[f"mrr@{metrics.mrr_k}"] = reciprocal_rank_at(ranked, judged, metrics.mrr_k)
    scores.update({f"ndcg@{k}": ndcg_at(ranked, judged, k) for k in metrics.ks})
    return scores


def judged_queries(qrels: Qrels) -> list[str]:
    """The queries with at least one relevant document (the others are skipped), sorted."""
    return sorted(q for q, judged in qrels.items() if _relevant(judged))


def evaluate(run: Run, qrels: Qrels, metrics: MetricSet) -> dict[str, float]:
    """Mean of each metric over the judged queries; a judged query missing from `run` scores 0."""
    queries = judged_queries(qrels)
    totals = dict.fromkeys(metrics.names(), 0.0)
    for query in queries:
        for name, value in per_query(dedupe(run.get(query, ())), qrels[query], metrics).items():
            totals[name] += value
    return {name: total / len(queries) if queries else 0.0 for name, total in totals.items()}
