"""Compressors: TF-IDF sentence selection within the budget, document order, the top hit always kept."""

from __future__ import annotations

from knowledge.pipeline.chunkers.base import count_tokens
from knowledge.pipeline.compressors.none import NoCompressor
from knowledge.pipeline.compressors.tfidf import TfidfCompressor, score_sentences
from knowledge.pipeline.types import Candidate, Query

CATS = Query(text="cats")


def cand(chunk_id: int, content: str) -> Candidate:
    return Candidate(
        chunk_id=chunk_id, document_id=1, chunk_index=chunk_id, content=content, score=1.0 / chunk_id
    )


HITS = [
    cand(1, "Cats purr loudly. Dogs bark at night. Cats also hunt mice."),  # 3 + 4 + 4 tokens
    cand(2, "Ships carry freight. Cats sleep a lot."),  # 3 + 4
    cand(3, "Nothing relevant here at all."),  # 5
]


def compress(budget: int, hits: list[Candidate] = HITS, query: Query = CATS) -> list[tuple[int, str]]:
    return [(c.chunk_id, c.content) for c in TfidfCompressor().compress(query, hits, budget)]


def test_everything_fits_so_nothing_changes() -> None:
    assert compress(100) == [(c.chunk_id, c.content) for c in HITS]


def test_best_sentences_first_kept_in_text_order_later_hits_dropped() -> None:
    # "Cats purr loudly." (3) scores above "Cats also hunt mice." (4, one more rare term); both fit in 8,
    # the dog sentence does not, and nothing of hit 2 fits in the 1 token left, so hits 2 and 3 go.
    assert compress(8) == [(1, "Cats purr loudly.\nCats also hunt mice.")]


def test_budget_is_shared_across_hits_in_rank_order() -> None:
    result = compress(15)
    assert result == [(1, HITS[0].content), (2, "Cats sleep a lot.")]
    assert sum(count_tokens(text) for _, text in result) <= 15


def test_the_top_hit_is_never_dropped() -> None:
    assert compress(2) == [(1, "Cats purr")]
    assert compress(1, query=Query(text=None)) == [(1, "Cats")]


def test_selected_sentences_keep_document_order_and_separators() -> None:
    hit = cand(1, "Birds sing.  Mice squeak often.\nCats purr softly.")
    assert compress(5, [hit], Query(text="cats birds")) == [(1, "Birds sing.\nCats purr softly.")]
    adjacent = cand(1, "Cats purr.  Birds sing.\nMice squeak loudly today.")
    assert compress(4, [adjacent], Query(text="cats birds")) == [(1, "Cats purr.  Birds sing.")]


def test_hits_without_content_cost_nothing() -> None:
    empty = cand(2, "")
    assert compress(11, [HITS[0], empty, HITS[1]]) == [(1, HITS[0].content), (2, "")]


def test_payload_and_scores_survive() -> None:
    hit = Candidate(chunk_id=7, document_id=3, chunk_index=2, content="A b. C d.", score=0.5, payload="x")
    (out,) = TfidfCompressor().compress(Query(text="c"), [hit], 2)
    assert (out.content, out.payload, out.score, out.document_id) == ("C d.", "x", 0.5, 3)


def test_sentence_scores_follow_tfidf() -> None:
    (first, second) = score_sentences("mice", [HITS[0].content, HITS[1].content])
    assert [s.tokens for s in first] == [3, 4, 4]
    assert first[2].score > 0 and first[0].score == first[1].score == 0.0
    assert all(s.score == 0.0 for s in second)


def test_no_hits() -> None:
    assert TfidfCompressor().compress(CATS, [], 10) == []


def test_none_compressor_passes_through() -> None:
    assert NoCompressor().compress(CATS, HITS, 1) == HITS
