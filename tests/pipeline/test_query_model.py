"""The local model's quantized query copy: how it is built, how close its vectors stay, and the fallback."""

from __future__ import annotations

import collections
import importlib.util
import io
import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from knowledge.pipeline.embedders import local
from knowledge.pipeline.embedders.local import LocalMiniLMEmbedder, model_files
from knowledge.pipeline.embedders.query_model import down_projections, query_model_path

NEEDED = (local.MODEL_PACKAGE, local.TOKENIZER_PACKAGE, "onnxruntime", "tokenizers", "onnx")
MISSING = [package for package in NEEDED if importlib.util.find_spec(package) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)}")

QUESTIONS = [
    "How do I rotate an API key?",
    "Do statins cause muscle pain in older patients?",
    "what is the parental leave policy",
    "Which enzyme breaks down lactose in the small intestine?",
]
PASSAGES = [
    "To rotate a key, create a new one, deploy it, then revoke the old key in the admin.",
    "Myalgia was reported by 10% of elderly patients taking simvastatin.",
    "Employees get sixteen weeks of paid parental leave after a birth or adoption.",
    "Lactase, produced in the small intestine, hydrolyses lactose into glucose and galactose.",
]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture
def fresh_runtimes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions created anew in this test (the process keeps one per kind)."""
    monkeypatch.setattr(local, "_runtimes", {})


def test_every_projection_but_the_ffn_outputs_runs_in_int8(settings: Any, tmp_path: Path) -> None:
    import onnx

    settings.KNOWLEDGE_MODEL_CACHE_DIR = tmp_path
    path = query_model_path(model_files()[0])
    assert path.parent == tmp_path and path.name.startswith("query-")
    graph = onnx.load(str(path), load_external_data=False).graph
    ops = collections.Counter(node.op_type for node in graph.node)
    # Six layers: Q, K, V, the attention output and the FFN input projection each become MatMulInteger.
    assert ops["MatMulInteger"] == 30
    weights = {i.name: tuple(i.dims) for i in graph.initializer}
    float_projections = [n for n in graph.node if n.op_type == "MatMul" and set(n.input) & set(weights)]
    assert len(float_projections) == 6
    assert {weights[x] for n in float_projections for x in n.input if x in weights} == {(1536, 384)}
    assert sorted(n.name for n in float_projections) == sorted(down_projections(path))


def test_query_vectors_stay_close_to_the_document_vectors(fresh_runtimes: None) -> None:
    embedder = LocalMiniLMEmbedder()
    queries, documents = embedder.embed_queries(QUESTIONS), embedder.embed_batch(QUESTIONS)
    for query, document in zip(queries, documents, strict=True):
        assert 0.99 < cosine(query, document) < 0.99999  # close, and not the shipped model's own vector
    assert local.get_query_runtime() is not local.get_runtime()
    # Each question still finds its own passage, as with the shipped model.
    passages = embedder.embed_batch(PASSAGES)
    for i, query in enumerate(queries):
        assert max(range(len(PASSAGES)), key=lambda j: cosine(query, passages[j])) == i
    # A question's vector does not depend on the questions embedded with it.
    assert embedder.embed_query(QUESTIONS[1]) == queries[1] == embedder.embed_queries(QUESTIONS[1:3])[0]


def test_turned_off_queries_use_the_shipped_model(settings: Any, fresh_runtimes: None) -> None:
    settings.KNOWLEDGE_LOCAL_EMBEDDER_QUERY_INT8 = False
    embedder = LocalMiniLMEmbedder()
    assert embedder.embed_queries(QUESTIONS) == embedder.embed_batch(QUESTIONS)
    assert local.get_query_runtime() is local.get_runtime()


def test_a_copy_that_cannot_be_built_leaves_queries_on_the_shipped_model(
    settings: Any, tmp_path: Path, fresh_runtimes: None, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    settings.KNOWLEDGE_MODEL_CACHE_DIR = blocker / "models"
    embedder = LocalMiniLMEmbedder()
    with caplog.at_level(logging.WARNING, logger="knowledge.pipeline.embedders.local"):
        vectors = embedder.embed_queries(QUESTIONS)
    assert vectors == embedder.embed_batch(QUESTIONS)
    assert "search queries use the shipped model (slower): cannot create the model cache" in caplog.text
    assert local.get_query_runtime() is local.get_runtime()  # one session, not a second copy of it


def test_a_copy_that_does_not_load_leaves_queries_on_the_shipped_model(
    settings: Any, tmp_path: Path, fresh_runtimes: None, caplog: pytest.LogCaptureFixture
) -> None:
    settings.KNOWLEDGE_MODEL_CACHE_DIR = tmp_path
    query_model_path(model_files()[0]).write_bytes(b"not an ONNX model")  # a damaged disk, say
    embedder = LocalMiniLMEmbedder()
    with caplog.at_level(logging.WARNING, logger="knowledge.pipeline.embedders.local"):
        assert embedder.embed_queries(QUESTIONS[:1]) == embedder.embed_batch(QUESTIONS[:1])
    assert "search queries use the shipped model (slower): the copy does not load:" in caplog.text


def test_concurrent_first_uses_build_the_copy_once(
    settings: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings.KNOWLEDGE_MODEL_CACHE_DIR = tmp_path
    paths: list[Path] = []
    source = model_files()[0]
    threads = [threading.Thread(target=lambda: paths.append(query_model_path(source))) for _ in range(3)]
    with caplog.at_level(logging.INFO, logger="knowledge.pipeline.embedders.query_model"):
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(paths) == 3 and len(set(paths)) == 1 and paths[0].is_file()
    assert caplog.text.count("built the quantized query model") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([paths[0].name, paths[0].stem + ".lock"])


@pytest.mark.django_db
def test_make_run_prepares_the_copy_before_the_first_search(
    settings: Any, tmp_path: Path, fresh_runtimes: None
) -> None:
    from django.core.management import call_command

    from knowledge.pipeline.active import forget_active_embedder

    settings.KNOWLEDGE_EMBEDDER, settings.KNOWLEDGE_MODEL_CACHE_DIR = "local", tmp_path
    forget_active_embedder()
    out = io.StringIO()
    call_command("prepare_embedder", stdout=out)
    assert out.getvalue().startswith("embedder all-MiniLM-L6-v2-int8 ready (")
    assert [p.suffix for p in sorted(tmp_path.iterdir())] == [".lock", ".onnx"]
    assert "prepare_embedder" in (settings.BASE_DIR / "scripts" / "run.sh").read_text()
    forget_active_embedder()
