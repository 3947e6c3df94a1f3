"""Plugin selection (environment, then plugins.json, then default) and contract checks with clear messages."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from knowledge.checks import check_pipeline_plugins
from knowledge.pipeline.chunkers.base import Chunker, ChunkSource, ChunkText
from knowledge.pipeline.embedders.base import Embedder
from knowledge.pipeline.fusers.weighted import WeightedFuser
from knowledge.pipeline.registry import (
    LAYERS,
    build,
    configured_name,
    configured_plugin,
    get_compressor,
    get_fuser,
    get_reranker,
)
from knowledge.pipeline.rerankers.mmr import MMRReranker
from knowledge.pipeline.validation import validate_layer, validate_pipeline

HERE = "tests.pipeline.test_registry"


class NoEmbedBatch(Embedder):
    name = "no-embed-batch"
    dimension = 3


class ZeroDimension(Embedder):
    name = "zero"
    dimension = 0

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return [[] for _ in texts]


class WrongLength(Embedder):
    name = "wrong-length"
    dimension = 4

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return [[0.5, 0.5, 0.5] for _ in texts]


class NotFinite(WrongLength):
    name = "not-finite"
    dimension = 3

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return [[float("nan"), 0.0, 1.0] for _ in texts]


class Exploding(Chunker):
    def __init__(self) -> None:
        raise RuntimeError("model server down")

    def chunk(self, document: ChunkSource) -> list[ChunkText]:
        return []


class Gappy(Chunker):
    def chunk(self, document: ChunkSource) -> list[ChunkText]:
        return [ChunkText(index=0, text="a"), ChunkText(index=2, text="b")]


@pytest.fixture
def plugins(settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Write plugins.json; layer settings start unset (None), as when no environment variable is set."""
    settings.KNOWLEDGE_PLUGINS_FILE = tmp_path / "plugins.json"
    for layer in LAYERS:
        setattr(settings, f"KNOWLEDGE_{layer.upper()}", None)
        monkeypatch.delenv(f"KNOWLEDGE_{layer.upper()}", raising=False)

    def write(content: Any) -> Path:
        path: Path = settings.KNOWLEDGE_PLUGINS_FILE
        path.write_text(content if isinstance(content, str) else json.dumps(content))
        return path

    return write


def test_defaults_without_environment_or_file(plugins) -> None:  # type: ignore[no-untyped-def]
    assert {layer: configured_name(layer) for layer in LAYERS} == {
        "embedder": "local",
        "chunker": "heading-prefix",
        "fuser": "zscore",
        "reranker": "none",
        "compressor": "none",
    }
    assert configured_plugin("fuser").origin == "default"


def test_file_beats_default_and_passes_options(plugins) -> None:  # type: ignore[no-untyped-def]
    path = plugins({"fuser": {"class": "weighted", "options": {"alpha": 0.2}}, "reranker": "mmr"})
    fuser = get_fuser()
    assert isinstance(fuser, WeightedFuser) and fuser.alpha == 0.2
    assert isinstance(get_reranker(), MMRReranker)
    assert configured_plugin("reranker").origin == f"{path} ['reranker']"


def test_environment_beats_file(plugins, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    plugins({"fuser": "weighted", "compressor": "tfidf"})
    settings.KNOWLEDGE_FUSER = "zscore"  # equal to the default, so it counts only when the variable is set
    assert configured_name("fuser") == "weighted"
    monkeypatch.setenv("KNOWLEDGE_FUSER", "zscore")
    assert configured_plugin("fuser").origin == "environment variable KNOWLEDGE_FUSER"
    assert configured_name("fuser") == "zscore"
    settings.KNOWLEDGE_COMPRESSOR = "none"
    monkeypatch.setenv("KNOWLEDGE_COMPRESSOR", "none")
    assert type(get_compressor()).__name__ == "NoCompressor"


def test_environment_naming_the_file_plugin_keeps_its_options(plugins, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    plugins(
        {"fuser": {"class": "knowledge.pipeline.fusers.weighted.WeightedFuser", "options": {"alpha": 0.9}}}
    )
    settings.KNOWLEDGE_FUSER = "weighted"
    assert configured_plugin("fuser").options == {"alpha": 0.9}
    assert get_fuser().alpha == 0.9  # type: ignore[attr-defined]
    settings.KNOWLEDGE_FUSER = "rrf"
    monkeypatch.setenv("KNOWLEDGE_FUSER", "rrf")
    # the alias's own options (from the environment's KNOWLEDGE_RRF_K), not the file's
    assert (configured_name("fuser"), configured_plugin("fuser").options) == ("rrf", {"k": 60})


def test_dotted_paths_and_explicit_options(plugins) -> None:  # type: ignore[no-untyped-def]
    plugins({"embedder": {"class": "knowledge.pipeline.embedders.hashing.HashingEmbedder", "options": {}}})
    assert build("embedder", dimension=16).dimension == 16
    assert build("chunker", "fixed-size", max_tokens=5).max_tokens == 5


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "cannot read the plugins file"),
        ('["rrf"]', "expected a JSON object"),
        ({"ranker": "mmr"}, "unknown layer(s) 'ranker'"),
        ({"fuser": {"class": "rrf", "opts": {}}}, "is an alias, a dotted path, or"),
        ({"fuser": {"class": "rrf", "options": []}}, "is an alias, a dotted path, or"),
    ],
)
def test_malformed_plugins_file_is_refused(plugins, content: Any, message: str) -> None:  # type: ignore[no-untyped-def]
    plugins(content)
    with pytest.raises(ImproperlyConfigured, match=message.replace("(", r"\(").replace(")", r"\)")):
        configured_plugin("fuser")


def test_a_broken_plugins_file_is_one_error(plugins) -> None:  # type: ignore[no-untyped-def]
    path = plugins("{not json")
    (error,) = check_pipeline_plugins()
    assert error.msg.startswith(f"embedder configuration: {path}: cannot read the plugins file")


def test_missing_plugins_file_means_no_plugins(plugins, settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.KNOWLEDGE_PLUGINS_FILE = tmp_path / "absent.json"
    assert configured_name("reranker") == "none"


def problems(layer: str, deep: bool = False) -> str:
    return " ".join(validate_layer(layer, deep=deep).problems)


@pytest.mark.parametrize(
    ("layer", "entry", "message"),
    [
        ("embedder", f"{HERE}.NoEmbedBatch", "does not implement embed_batch(), which every Embedder must"),
        ("embedder", f"{HERE}.ZeroDimension", "dimension must be a positive int, got 0"),
        ("reranker", "knowledge.pipeline.fusers.rrf.RRFFuser", "is not a knowledge.pipeline.rerankers.base"),
        ("reranker", "knowledge.pipeline.rerankers.nope.Missing", "cannot import"),
        ("chunker", f"{HERE}.Exploding", "cannot be built with options {}: model server down"),
        ("fuser", {"class": "weighted", "options": {"alpha": 3}}, "alpha must lie in [0, 1]"),
        ("fuser", {"class": "rrf", "options": {"bogus": 1}}, "built with options {'k': 60, 'bogus': 1}"),
    ],
)
def test_bad_plugins_are_reported_by_the_system_check(plugins, layer: str, entry: Any, message: str) -> None:  # type: ignore[no-untyped-def]
    plugins({layer: entry})
    assert message in problems(layer)
    (error,) = check_pipeline_plugins()
    assert error.id == "knowledge.E001" and error.msg.startswith(f"{layer} ") and message in error.msg
    assert f"KNOWLEDGE_{layer.upper()}" in (error.hint or "")


def test_the_system_check_does_not_embed_but_the_deep_check_does(plugins) -> None:  # type: ignore[no-untyped-def]
    plugins({"embedder": f"{HERE}.WrongLength", "chunker": f"{HERE}.Gappy"})
    assert check_pipeline_plugins() == []
    assert "returned a vector of 3 values, but dimension is 4" in problems("embedder", deep=True)
    assert "must number chunks 0..n-1" in problems("chunker", deep=True)
    plugins({"embedder": f"{HERE}.NotFinite"})
    assert "non-finite" in problems("embedder", deep=True)


def test_every_built_in_plugin_passes_the_deep_check(plugins) -> None:  # type: ignore[no-untyped-def]
    for layer, plugins_of_layer in LAYERS.items():
        for name in plugins_of_layer.aliases():
            if layer == "embedder" and name != "hashing":
                continue  # the model and HTTP embedders have their own tests
            plugins({layer: name})
            report = validate_layer(layer, deep=True)
            assert report.ok, (name, report.problems)


def test_default_configuration_is_valid(plugins) -> None:  # type: ignore[no-untyped-def]
    reports = validate_pipeline(deep=True)
    assert [r.layer for r in reports] == list(LAYERS) and all(r.ok for r in reports)
    assert reports[0].detail == "model all-MiniLM-L6-v2-int8, 384 dimensions"
