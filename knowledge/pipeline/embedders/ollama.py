"""Embedder for Ollama's `/api/embed` endpoint (a local or self-hosted Ollama server)."""

from __future__ import annotations

from typing import Any, Unpack

from knowledge.pipeline.embedders.http import HttpEmbedder, TransportOptions, option

DEFAULT_BASE_URL = "http://127.0.0.1:11434"
DEFAULT_MODEL = "nomic-embed-text"
DEFAULT_DIMENSION = 768


class OllamaEmbedder(HttpEmbedder):
    """POSTs `{"model", "input": [...]}` to `<base_url>/api/embed` and reads `{"embeddings": [[...]]}`.

    The model must already be pulled on the server. The KNOWLEDGE_OLLAMA_* settings reach it as
    the `ollama` alias's options (config/plugins.py).
    """

    label = "ollama"

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        dimension: int | None = None,
        **options: Unpack[TransportOptions],
    ) -> None:
        root = option(base_url, DEFAULT_BASE_URL)
        super().__init__(
            url=root.rstrip("/") + "/api/embed",
            model=option(model, DEFAULT_MODEL),
            dimension=int(option(dimension, DEFAULT_DIMENSION)),
            headers={},
            **options,
        )

    def _request(self, texts: list[str]) -> list[Any]:
        reply = self.client.post(self.url, {"model": self.model, "input": texts})
        embeddings = reply.get("embeddings") if isinstance(reply, dict) else None
        if not isinstance(embeddings, list):
            self._fail("replied without an `embeddings` list")
        return embeddings
