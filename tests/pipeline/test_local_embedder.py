"""The local all-MiniLM-L6-v2 (int8 ONNX) embedder, run for real on the packaged model."""

from __future__ import annotations

import importlib.util
import math
import threading

import pytest

from knowledge.pipeline.embedders.local import (
    MODEL_PACKAGE,
    TOKENIZER_PACKAGE,
    LocalMiniLMEmbedder,
    get_runtime,
)

NEEDED = (MODEL_PACKAGE, TOKENIZER_PACKAGE, "onnxruntime", "tokenizers")
MISSING = [package for package in NEEDED if importlib.util.find_spec(package) is None]
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"local model not installed ({', '.join(MISSING)}): see requirements/models.txt"
)


@pytest.fixture(scope="module")
def embedder() -> LocalMiniLMEmbedder:
    return LocalMiniLMEmbedder()


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_dimension_and_unit_length(embedder: LocalMiniLMEmbedder) -> None:
    vector = embedder.embed("How do I rotate an API key?")
    assert embedder.dimension == 384 and len(vector) == 384
    assert math.sqrt(sum(v * v for v in vector)) == pytest.approx(1.0, abs=1e-5)
    assert embedder.name == "all-MiniLM-L6-v2-int8"


def test_deterministic(embedder: LocalMiniLMEmbedder) -> None:
    text = "The quarterly report is due on Friday."
    assert embedder.embed(text) == embedder.embed(text)


def test_paraphrases_are_closer_than_unrelated_texts(embedder: LocalMiniLMEmbedder) -> None:
    reset, change, weather, cat, kitten = embedder.embed_batch(
        [
            "How do I reset my password?",
            "What are the steps to change my password?",
            "The weather in Paris is sunny today.",
            "A cat sat on the mat.",
            "A kitten was sitting on the rug.",
        ]
    )
    assert cosine(reset, change) > 0.7
    assert cosine(cat, kitten) > 0.5
    for unrelated in (weather, cat, kitten):
        assert cosine(reset, unrelated) < 0.2
    assert cosine(cat, kitten) > cosine(cat, weather) + 0.4


def test_batch_matches_single_in_input_order(embedder: LocalMiniLMEmbedder) -> None:
    long = "a much longer text about database replication and failover " * 5
    texts = [long, "short", "", "medium length text"]
    batch = LocalMiniLMEmbedder(batch_size=3).embed_batch(texts)
    for text, vector in zip(texts, batch, strict=True):
        assert cosine(vector, embedder.embed(text)) == pytest.approx(1.0, abs=1e-4)


def test_very_long_text_is_truncated_at_256_tokens(embedder: LocalMiniLMEmbedder) -> None:
    long_text = "word " * 10_000
    vector = embedder.embed(long_text)
    assert len(vector) == 384 and all(math.isfinite(v) for v in vector)
    assert len(get_runtime().tokenizer.encode(long_text).ids) == 256
    # Text past the 256th token does not change the vector.
    assert cosine(vector, embedder.embed(long_text + " unrelated tail about volcanoes")) == pytest.approx(1.0)


def test_empty_input(embedder: LocalMiniLMEmbedder) -> None:
    assert embedder.embed_batch([]) == []


def test_one_session_shared_by_threads(embedder: LocalMiniLMEmbedder) -> None:
    texts = [f"document number {i} about topic {i % 3}" for i in range(8)]
    wanted = embedder.embed_batch(texts)
    results: dict[int, list[list[float]]] = {}

    def work(n: int) -> None:
        results[n] = LocalMiniLMEmbedder().embed_batch(texts)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(results[n] == wanted for n in range(4))
    assert get_runtime() is get_runtime()


def test_idle_pool_threads_do_not_spin() -> None:
    """Spinning threads would take the CPU from the PostgreSQL backend serving the same search."""
    options = get_runtime().session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
