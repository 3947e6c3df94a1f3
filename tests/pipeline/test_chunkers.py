"""Chunkers: the shared contract (indexes 0..n-1, budget, valid parent links) and each one's own behaviour."""

from __future__ import annotations

import pytest

from knowledge.pipeline.chunkers.base import Chunker, ChunkSource, ChunkText, count_tokens
from knowledge.pipeline.chunkers.fixed_size import FixedSizeChunker
from knowledge.pipeline.chunkers.heading_prefix import HeadingPrefixChunker
from knowledge.pipeline.chunkers.parent_child import ParentChildChunker
from knowledge.pipeline.chunkers.recursive import RecursiveChunker

WORDS = " ".join(f"w{i}" for i in range(100))
MARKDOWN = (
    "# Guide\nIntro line one.\nIntro line two.\n\n## Install\n"
    + " ".join(f"step{i}." for i in range(30))
    + "\n\n```python\n# not a heading\nprint('hi')\n```\n\n## Use\nCall it. Then relax."
)
PROSE = "\n\n".join(
    " ".join(f"P{p}S{s}w{w}" + ("." if w == 5 else "") for s in range(3) for w in range(6)) for p in range(4)
)

CHUNKERS = {
    "heading-prefix": lambda: HeadingPrefixChunker(max_tokens=12, overlap=2),
    "fixed-size": lambda: FixedSizeChunker(max_tokens=12, overlap=2),
    "recursive": lambda: RecursiveChunker(max_tokens=12, overlap=2),
    "parent-child": lambda: ParentChildChunker(parent_tokens=24, child_tokens=8),
}


@pytest.fixture(params=sorted(CHUNKERS))
def chunker(request: pytest.FixtureRequest) -> Chunker:
    return CHUNKERS[request.param]()  # type: ignore[no-any-return]


@pytest.mark.parametrize("content", [WORDS, MARKDOWN, PROSE, "one", "   "])
def test_indexes_are_contiguous_and_parent_links_valid(chunker: Chunker, content: str) -> None:
    chunks = chunker.chunk(ChunkSource(title="Doc", content=content))
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert chunks and all(c.text.strip() for c in chunks)
    by_index = {c.index: c for c in chunks}
    for child in chunks:
        if child.parent_index is None:
            continue
        parent = by_index[child.parent_index]
        assert parent.parent_index is None and parent.index < child.index


def test_blank_content_with_a_blank_title_gives_no_chunks(chunker: Chunker) -> None:
    assert chunker.chunk(ChunkSource(title="", content=" \n ")) == []


def test_no_word_is_lost(chunker: Chunker) -> None:
    chunks = chunker.chunk(ChunkSource(title="", content=PROSE))
    assert {w for c in chunks for w in c.text.split()} == set(PROSE.split())


def test_fixed_size_windows_overlap_exactly() -> None:
    chunks = FixedSizeChunker(max_tokens=40, overlap=10).chunk(ChunkSource(title="t", content=WORDS))
    assert [c.text.split()[0] for c in chunks] == ["w0", "w30", "w60"]
    assert [c.token_count for c in chunks] == [40, 40, 40]
    assert chunks[1].text.split()[:10] == chunks[0].text.split()[-10:]


def test_fixed_size_zero_overlap_is_honoured() -> None:
    chunks = FixedSizeChunker(max_tokens=50, overlap=0).chunk(ChunkSource(title="", content=WORDS))
    assert [c.text for c in chunks] == [" ".join(WORDS.split()[:50]), " ".join(WORDS.split()[50:])]


def test_recursive_keeps_paragraphs_whole_when_they_fit() -> None:
    chunks = RecursiveChunker(max_tokens=36, overlap=0).chunk(ChunkSource(title="", content=PROSE))
    paragraphs = PROSE.split("\n\n")
    assert [c.text for c in chunks] == ["\n\n".join(paragraphs[:2]), "\n\n".join(paragraphs[2:])]


def test_recursive_splits_a_long_paragraph_at_sentences() -> None:
    chunks = RecursiveChunker(max_tokens=12, overlap=0).chunk(ChunkSource(title="", content=PROSE))
    first_paragraph_sentences = [
        " ".join(f"P0S{s}w{w}" + ("." if w == 5 else "") for w in range(6)) for s in range(3)
    ]
    assert chunks[0].text == " ".join(first_paragraph_sentences[:2])
    assert chunks[1].text == first_paragraph_sentences[2]
    assert all(c.token_count <= 12 for c in chunks)


def test_recursive_overlap_repeats_trailing_pieces() -> None:
    chunks = RecursiveChunker(max_tokens=12, overlap=6).chunk(ChunkSource(title="", content=PROSE))
    assert chunks[1].text.startswith("P0S1w0")  # the second sentence is carried over
    assert all(c.token_count <= 12 for c in chunks)


def test_recursive_falls_back_to_words() -> None:
    chunks = RecursiveChunker(max_tokens=30, overlap=0).chunk(ChunkSource(title="", content=WORDS))
    assert [c.token_count for c in chunks] == [30, 30, 30, 10]


def test_heading_prefix_carries_the_heading_path_and_keeps_line_breaks() -> None:
    chunks = HeadingPrefixChunker(max_tokens=200, overlap=0).chunk(
        ChunkSource(title="Manual", content=MARKDOWN)
    )
    assert chunks[0].text == "Manual > Guide\nIntro line one.\nIntro line two."
    assert chunks[1].text.startswith("Manual > Guide > Install\nstep0.")
    assert "```python\n# not a heading\nprint('hi')\n```" in chunks[1].text
    assert chunks[2].text == "Manual > Guide > Use\nCall it. Then relax."
    assert chunks[2].metadata == {"headings": ["Guide", "Use"]}


def test_heading_prefix_counts_the_prefix_against_the_budget() -> None:
    chunks = HeadingPrefixChunker(max_tokens=12, overlap=2).chunk(
        ChunkSource(title="Manual", content=MARKDOWN)
    )
    assert all(c.token_count <= 12 for c in chunks)
    install = [c for c in chunks if c.metadata["headings"] == ["Guide", "Install"]]
    assert install[1].text.split("\n", 1)[1].split()[:2] == install[0].text.split()[-2:]
    # the fenced block fits the budget, so it stays one piece (split at paragraphs first)
    assert install[-1].text == "Manual > Guide > Install\n```python\n# not a heading\nprint('hi')\n```"


def test_heading_prefix_drops_a_first_heading_equal_to_the_title() -> None:
    chunks = HeadingPrefixChunker(max_tokens=50, overlap=0).chunk(
        ChunkSource(title="Guide", content=MARKDOWN)
    )
    assert chunks[0].text.startswith("Guide\nIntro")


def test_heading_prefix_title_only_document() -> None:
    assert HeadingPrefixChunker().chunk(ChunkSource(title="Only a title", content="")) == [
        ChunkText(index=0, text="Only a title")
    ]


def test_parent_child_families() -> None:
    chunks = ParentChildChunker(parent_tokens=36, child_tokens=12).chunk(ChunkSource(title="", content=PROSE))
    paragraphs = PROSE.split("\n\n")
    parents = [c for c in chunks if c.metadata["role"] == "parent"]
    assert [p.text for p in parents] == ["\n\n".join(paragraphs[:2]), "\n\n".join(paragraphs[2:])]
    for parent in parents:
        children = [c for c in chunks if c.parent_index == parent.index]
        assert [c.index for c in children] == list(range(parent.index + 1, parent.index + 1 + len(children)))
        assert len(children) == 4 and all(c.token_count <= 12 and c.text in parent.text for c in children)
        assert " ".join(c.text for c in children).split() == parent.text.split()


def test_parent_child_small_parent_is_a_single_leaf() -> None:
    chunks = ParentChildChunker(parent_tokens=36, child_tokens=12).chunk(
        ChunkSource(title="", content="Tiny text.")
    )
    assert chunks == [ChunkText(index=0, text="Tiny text.", metadata={"role": "leaf"})]


def test_parent_child_rejects_children_larger_than_parents() -> None:
    with pytest.raises(ValueError, match="child_tokens <= parent_tokens"):
        ParentChildChunker(parent_tokens=8, child_tokens=16)


def test_token_count_is_whitespace_words() -> None:
    assert count_tokens(" a  b\nc ") == 3


PAGED = "# Report\nFirst page words.\n\f\nSecond page words, same section.\n\f\n## Annex\nThird page."


def test_heading_prefix_chunks_never_cross_a_page_break_and_keep_the_heading_path() -> None:
    chunks = HeadingPrefixChunker(max_tokens=100, overlap=0).chunk(ChunkSource("Doc", PAGED))
    assert [(c.text, c.metadata.get("page")) for c in chunks] == [
        ("Doc > Report\nFirst page words.", 1),
        ("Doc > Report\nSecond page words, same section.", 2),
        ("Doc > Report > Annex\nThird page.", 3),
    ]


@pytest.mark.parametrize("name", ["fixed-size", "recursive", "parent-child"])
def test_other_chunkers_tag_the_page_each_chunk_starts_on(name: str) -> None:
    pages = "\n\f\n".join(" ".join(f"p{p}w{w}" for w in range(10)) for p in (1, 2, 3))
    chunks = CHUNKERS[name]().chunk(ChunkSource("Doc", pages))
    for chunk in chunks:
        first_word = chunk.text.split()[0]
        assert chunk.metadata["page"] == int(first_word[1]), (chunk.text, chunk.metadata)
    assert {c.metadata["page"] for c in chunks} == {1, 2, 3}


@pytest.mark.parametrize("name", list(CHUNKERS))
def test_unpaged_text_has_no_page(name: str) -> None:
    assert all("page" not in c.metadata for c in CHUNKERS[name]().chunk(ChunkSource("Doc", MARKDOWN)))
