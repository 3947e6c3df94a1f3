"""Embedder for any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Azure-style proxies, vLLM, ...)."""

from __future__ import annotations

from typing import Any, Unpack

from knowledge.pipeline.embedders.http import HttpEmbedder, TransportOptions, option

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_DIMENSION = 1536


class OpenAIEmbedder(HttpEmbedder):
    """POSTs `{"model", "input": [...]}` to `<base_url>/embeddings`; `base_url` includes `/v1`.

    `send_dimensions` passes `dimension` as the request's `dimensions` parameter, for models that can
    shorten their vectors (text-embedding-3-*). The KNOWLEDGE_OPENAI_* settings reach it as
    the `openai` alias's options (config/plugins.py).
    """

    label = "openai"

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        dimension: int | None = None,
        *,
        send_dimensions: bool | None = None,
        **options: Unpack[TransportOptions],
    ) -> None:
        key = option(api_key, "")
        root = option(base_url, DEFAULT_BASE_URL)
        super().__init__(
            url=root.rstrip("/") + "/embeddings",
            model=option(model, DEFAULT_MODEL),
            dimension=int(option(dimension, DEFAULT_DIMENSION)),
            headers={"Authorization": f"Bearer {key}"} if key else {},
            **options,
        )
        self.send_dimensions = bool(option(send_dimensions, False))

    def _request(self, texts: list[str]) -> list[Any]:
        payload: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.send_dimensions:
            payload["dimensions"] = self.dimension
        reply = self.client.post(self.url, payload)
        data = reply.get("data") if isinstance(reply, dict) else None
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            self._fail("replied without a `data` list of embedding objects")
        if len(data) != len(texts):
            self._fail(f"returned {len(data)} embeddings for {len(texts)} inputs")
        indexes = [item.get("index") for item in data]
        if not all(type(i) is int for i in indexes) or sorted(indexes) != list(range(len(texts))):
            self._fail(f"returned indexes {indexes[:10]} for {len(texts)} inputs")
        # The spec does not promise that `data` comes in input order; `index` says where each belongs.
        return [item.get("embedding") for item in sorted(data, key=lambda item: item["index"])]
