"""The OpenAI-compatible and Ollama embedders against a real local HTTP server that fails on request."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from knowledge.pipeline.embedders.base import EmbedderError
from knowledge.pipeline.embedders.hashing import HashingEmbedder
from knowledge.pipeline.embedders.http import HttpEmbedder
from knowledge.pipeline.embedders.ollama import OllamaEmbedder
from knowledge.pipeline.embedders.openai import OpenAIEmbedder
from knowledge.pipeline.registry import build
from tests.embedding_stub import DIM, FakeEmbeddingServer, Fault, embedding_server
from tests.plugins import plugin_options


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    with embedding_server() as fake:
        yield fake


Factory = Callable[..., HttpEmbedder]


@pytest.fixture(params=["openai", "ollama"])
def make(request: pytest.FixtureRequest, server: FakeEmbeddingServer) -> Factory:
    def build(**options: Any) -> HttpEmbedder:
        options = {"dimension": DIM, "timeout": 2.0, "max_retries": 2, "backoff_base": 0.01, **options}
        if request.param == "openai":
            return OpenAIEmbedder(base_url=f"{server.root}/v1", api_key="sk-test", model="m", **options)
        return OllamaEmbedder(base_url=server.root, model="m", **options)

    return build


def expected(texts: list[str]) -> list[list[float]]:
    return HashingEmbedder(DIM).embed_batch(texts)


def assert_close(actual: list[list[float]], wanted: list[list[float]]) -> None:
    assert len(actual) == len(wanted)
    for a, w in zip(actual, wanted, strict=True):
        assert a == pytest.approx(w, abs=1e-9)


def test_embeds_and_normalises(make: Factory) -> None:
    embedder = make()
    vectors = embedder.embed_batch(["alpha beta", "gamma"])
    assert_close(vectors, expected(["alpha beta", "gamma"]))
    assert embedder.dimension == DIM and embedder.name.endswith(f":m@{DIM}")
    assert embedder.embed("gamma") == pytest.approx(vectors[1])


def test_batches_many_inputs_in_order(make: Factory, server: FakeEmbeddingServer) -> None:
    texts = [f"text number {i}" for i in range(10)]
    assert_close(make(batch_size=4).embed_batch(texts), expected(texts))
    assert [len(s.payload["input"]) for s in server.seen] == [4, 4, 2]
    assert [t for s in server.seen for t in s.payload["input"]] == texts


def test_empty_input_sends_nothing(make: Factory, server: FakeEmbeddingServer) -> None:
    assert make().embed_batch([]) == []
    assert server.seen == []


def test_openai_reply_out_of_index_order_is_reordered(server: FakeEmbeddingServer) -> None:
    server.reverse_order = True
    texts = ["first", "second", "third"]
    embedder = OpenAIEmbedder(base_url=f"{server.root}/v1", api_key="k", model="m", dimension=DIM)
    assert_close(embedder.embed_batch(texts), expected(texts))


def test_openai_sends_key_model_and_dimensions(server: FakeEmbeddingServer) -> None:
    embedder = OpenAIEmbedder(f"{server.root}/v1", "sk-secret", "m", DIM, send_dimensions=True)
    embedder.embed("x")
    (seen,) = server.seen
    assert seen.path == "/v1/embeddings"
    assert seen.headers["Authorization"] == "Bearer sk-secret"
    assert seen.payload == {"model": "m", "input": ["x"], "encoding_format": "float", "dimensions": DIM}


def test_retries_after_500_and_429(make: Factory, server: FakeEmbeddingServer) -> None:
    server.faults = [
        Fault(status=500, body="upstream exploded"),
        Fault(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "0.2"}),
    ]
    started = time.monotonic()
    assert_close(make().embed_batch(["a"]), expected(["a"]))
    assert len(server.seen) == 3
    assert time.monotonic() - started >= 0.2  # Retry-After was honoured


def test_gives_up_after_max_retries_as_transient(make: Factory, server: FakeEmbeddingServer) -> None:
    server.faults = [Fault(status=503, body={"error": "overloaded"})] * 3
    with pytest.raises(EmbedderError, match="failed after 3 attempts.*overloaded") as caught:
        make(max_retries=2).embed_batch(["a"])
    assert caught.value.permanent is False
    assert len(server.seen) == 3


def test_401_is_permanent_with_the_server_message(make: Factory, server: FakeEmbeddingServer) -> None:
    server.faults = [Fault(status=401, body={"error": {"message": "Incorrect API key provided"}})]
    with pytest.raises(EmbedderError, match="HTTP 401: Incorrect API key provided") as caught:
        make().embed_batch(["a"])
    assert caught.value.permanent is True
    assert len(server.seen) == 1


def test_ollama_error_string_is_reported(server: FakeEmbeddingServer) -> None:
    server.faults = [Fault(status=404, body={"error": 'model "m" not found, try pulling it first'})]
    with pytest.raises(EmbedderError, match='HTTP 404: model "m" not found') as caught:
        OllamaEmbedder(base_url=server.root, model="m", dimension=DIM).embed("a")
    assert caught.value.permanent is True


def test_wrong_vector_length_is_a_permanent_error(make: Factory, server: FakeEmbeddingServer) -> None:
    server.faults = [Fault(vector_length=DIM - 1)]
    with pytest.raises(EmbedderError, match=f"vector of {DIM - 1} values, expected {DIM}") as caught:
        make().embed_batch(["a", "b"])
    assert caught.value.permanent is True


def test_wrong_number_of_embeddings_is_an_error(make: Factory, server: FakeEmbeddingServer) -> None:
    server.faults = [Fault(status=200, body={"data": [], "embeddings": []})]
    with pytest.raises(EmbedderError, match="0 embeddings for 2 inputs"):
        make().embed_batch(["a", "b"])


def test_timeout_is_retried_then_fails(make: Factory, server: FakeEmbeddingServer) -> None:
    server.faults = [Fault(delay=1.0)] * 2
    with pytest.raises(EmbedderError, match="failed after 2 attempts.*timed out") as caught:
        make(timeout=0.2, max_retries=1).embed_batch(["a"])
    assert caught.value.permanent is False
    assert len(server.seen) == 2


def test_timeout_then_success(make: Factory, server: FakeEmbeddingServer) -> None:
    server.faults = [Fault(delay=1.0)]
    assert_close(make(timeout=0.2).embed_batch(["a"]), expected(["a"]))
    assert len(server.seen) == 2


def test_connection_refused_is_transient(make: Factory, server: FakeEmbeddingServer) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again below: nothing listens there
    embedder = make(max_retries=1)
    embedder.url = embedder.url.replace(server.root, f"http://127.0.0.1:{port}")
    with pytest.raises(EmbedderError, match="failed after 2 attempts.*refused") as caught:
        embedder.embed("a")
    assert caught.value.permanent is False


def test_the_openai_alias_takes_its_options_from_the_plugin_table(
    settings: Any, server: FakeEmbeddingServer
) -> None:
    options = {"base_url": f"{server.root}/v1/", "api_key": "sk-from-settings", "model": "custom-model"}
    plugin_options(settings, "embedder", "openai", **options, dimension=DIM)
    embedder = build("embedder", "openai")
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.name == f"openai:custom-model@{DIM}"
    assert_close(embedder.embed_batch(["a"]), expected(["a"]))
    assert server.seen[0].headers["Authorization"] == "Bearer sk-from-settings"


def test_the_ollama_alias_takes_its_options_from_the_plugin_table(
    settings: Any, server: FakeEmbeddingServer
) -> None:
    plugin_options(
        settings, "embedder", "ollama", base_url=server.root, model="nomic-embed-text", dimension=DIM
    )
    embedder = build("embedder", "ollama")
    assert isinstance(embedder, OllamaEmbedder)
    assert embedder.name == f"ollama:nomic-embed-text@{DIM}"
    assert_close(embedder.embed_batch(["a"]), expected(["a"]))
    assert server.seen[0].payload == {"model": "nomic-embed-text", "input": ["a"]}
    assert "Authorization" not in server.seen[0].headers


@pytest.mark.parametrize(
    "options",
    [{"base_url": "ftp://example.invalid"}, {"dimension": 0}, {"model": ""}, {"batch_size": 0}],
)
def test_bad_configuration_is_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ImproperlyConfigured):
        OllamaEmbedder(**{"base_url": "http://127.0.0.1:1", "model": "m", "dimension": DIM, **options})
