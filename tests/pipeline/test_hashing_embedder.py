"""The feature-hashing embedder: deterministic, unit length, similar texts closer."""

from __future__ import annotations

import math

import pytest

from knowledge.pipeline.embedders.hashing import HashingEmbedder


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_deterministic_across_instances() -> None:
    text = "Reset your password from the account settings page."
    assert HashingEmbedder().embed(text) == HashingEmbedder().embed(text)


@pytest.mark.parametrize("text", ["one", "a longer sentence with several words", "", "   "])
def test_vectors_have_the_dimension_and_unit_length(text: str) -> None:
    vector = HashingEmbedder(64).embed(text)
    assert len(vector) == 64
    assert math.sqrt(sum(v * v for v in vector)) == pytest.approx(1.0)


def test_similar_texts_are_closer_than_unrelated_ones() -> None:
    embedder = HashingEmbedder()
    query, near, far = embedder.embed_batch(
        [
            "how to reset the admin password",
            "steps to reset the admin password quickly",
            "quarterly revenue grew in the european market",
        ]
    )
    assert cosine(query, near) > cosine(query, far)


def test_batch_matches_single() -> None:
    embedder = HashingEmbedder()
    texts = ["first text", "second text"]
    assert embedder.embed_batch(texts) == [embedder.embed(t) for t in texts]


def test_name_carries_the_dimension() -> None:
    assert HashingEmbedder(128).name != HashingEmbedder(384).name


@pytest.mark.parametrize("dimension", [0, -1, 1.5])
def test_rejects_bad_dimension(dimension: object) -> None:
    with pytest.raises(ValueError):
        HashingEmbedder(dimension)  # type: ignore[arg-type]
