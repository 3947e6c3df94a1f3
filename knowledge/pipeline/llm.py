"""An OpenAI-compatible chat-completions client for LLM stages: JSON-schema answers, timeouts,
bounded retries and a token budget per search.

Retries back off exponentially (or as long as Retry-After asks) on timeouts, connection errors,
408, 429 and 5xx; any other 4xx, or an answer that is not the JSON object asked for, is permanent.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from django.conf import settings

logger = logging.getLogger(__name__)

RETRYABLE = {408, 429, 500, 502, 503, 504}
MAX_BACKOFF = 4.0
OPENAI_URL = "https://api.openai.com/v1"  # the default; without a key it is not a configured LLM
NOT_CONFIGURED = (
    "no LLM is configured (set KNOWLEDGE_LLM_API_KEY, or KNOWLEDGE_LLM_BASE_URL for a local model)"
)


class LlmError(Exception):
    """An LLM call failed; `permanent` says whether retrying can help. `summary` is safe to show a
    caller (no URL, no reply body); the message, with the details, is for the log."""

    def __init__(self, message: str, *, permanent: bool = False, summary: str | None = None) -> None:
        super().__init__(message)
        self.permanent = permanent
        self.summary = summary or message


@dataclass
class TokenBudget:
    """Tokens one search may spend on LLM calls, across its stages."""

    limit: int
    used: int = 0

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)

    def charge(self, tokens: int) -> None:
        self.used += max(0, tokens)


@dataclass
class ChatClient:
    base_url: str
    api_key: str = ""
    model: str = "gpt-4o-mini"
    timeout: float = 10.0
    max_retries: int = 2
    max_tokens: int = 512
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    @classmethod
    def from_settings(cls) -> ChatClient:
        return cls(
            base_url=settings.KNOWLEDGE_LLM_BASE_URL,
            api_key=settings.KNOWLEDGE_LLM_API_KEY,
            model=settings.KNOWLEDGE_LLM_MODEL,
            timeout=settings.KNOWLEDGE_LLM_TIMEOUT,
            max_retries=settings.KNOWLEDGE_LLM_RETRIES,
            max_tokens=settings.KNOWLEDGE_LLM_MAX_TOKENS,
        )

    @property
    def configured(self) -> bool:
        return bool(self.api_key) or self.base_url.rstrip("/") != OPENAI_URL

    def complete_json(
        self, *, system: str, user: str, schema: dict[str, Any], name: str, budget: TokenBudget | None = None
    ) -> dict[str, Any]:
        """The model's answer to `user`, as a JSON object following `schema`.

        :raises LlmError: when the call fails, the budget is spent, or the answer is not such an object.
        """
        if not self.configured:
            raise LlmError(NOT_CONFIGURED, permanent=True)  # never send a question nobody asked us to
        max_tokens = self.max_tokens if budget is None else min(self.max_tokens, budget.remaining)
        if max_tokens <= 0:
            raise LlmError("the search's LLM token budget is spent", permanent=True)
        payload = {
            "model": self.model,
            "temperature": 0,
            "max_tokens": max_tokens,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": True},
            },
        }
        reply = self._post(payload)
        if budget is not None:
            usage = reply.get("usage") or {}
            budget.charge(int(usage.get("total_tokens") or (len(system) + len(user)) // 4 + max_tokens))
        return _answer(reply)

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        url = self.base_url.rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        for attempt in range(self.max_retries + 1):
            wait = None
            try:
                response = httpx.post(url, json=payload, headers=headers, timeout=self.timeout)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                error = LlmError(
                    f"LLM request to {url} failed: {type(exc).__name__}: {exc}",
                    summary=f"the LLM could not be reached ({type(exc).__name__}; details in the server log)",
                )
            else:
                if response.status_code == 200:
                    return _json(response)
                error = LlmError(
                    f"LLM at {url} answered {response.status_code}: {response.text[:300]}",
                    permanent=response.status_code not in RETRYABLE,
                    summary=f"the LLM answered HTTP {response.status_code} (details in the server log)",
                )
                wait = _retry_after(response)
            if error.permanent or attempt == self.max_retries:
                logger.warning("%s", error)
                raise error
            self.sleep(
                wait if wait is not None else min(MAX_BACKOFF, 0.25 * 2**attempt) * random.uniform(0.5, 1.0)
            )
        raise AssertionError("unreachable")


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return min(MAX_BACKOFF, max(0.0, float(response.headers.get("Retry-After", ""))))
    except ValueError:
        return None


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        raise LlmError("the LLM's reply is not JSON", permanent=True) from None
    if not isinstance(body, dict):
        raise LlmError("the LLM's reply is not a JSON object", permanent=True)
    return body


def _answer(reply: dict[str, Any]) -> dict[str, Any]:
    try:
        content = reply["choices"][0]["message"]["content"]
        answer = json.loads(content)
    except (KeyError, IndexError, TypeError, ValueError):
        raise LlmError("the LLM's answer is not the JSON it was asked for", permanent=True) from None
    if not isinstance(answer, dict):
        raise LlmError("the LLM's answer is not a JSON object", permanent=True)
    return answer
