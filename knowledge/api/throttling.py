"""Per-key and per-tenant request limits: a fixed one-minute window counted in Redis (INCR, shared by
every worker process), answered with 429 and Retry-After above the limit.

With Redis unreachable the choice is KNOWLEDGE_RATE_LIMIT_ON_REDIS_DOWN: "open" (the default) serves
the request unthrottled, since search availability matters more than a limit during a broker outage;
"closed" answers 503. Either way Redis is not asked again for a few seconds, so an outage costs one
short connect timeout, not one per request.
"""

from __future__ import annotations

import logging
import threading
import time
from functools import lru_cache
from typing import Any

import redis
from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from knowledge.api.authentication import ApiClient
from knowledge.errors import ServiceUnavailable

logger = logging.getLogger(__name__)
WINDOW_SECONDS = 60
REDIS_TIMEOUT_SECONDS = 0.25
BACKOFF_SECONDS = 5.0
_down_until = 0.0
_down_lock = threading.Lock()


@lru_cache(maxsize=4)
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(
        url, socket_timeout=REDIS_TIMEOUT_SECONDS, socket_connect_timeout=REDIS_TIMEOUT_SECONDS
    )


def _limits(client: ApiClient) -> list[tuple[str, int]]:
    """(counter name, limit) of the key and of its tenant; a limit of 0 is none."""
    key, tenant = client.key, client.key.tenant
    key_limit = key.rate_limit_per_minute
    tenant_limit = tenant.rate_limit_per_minute
    wanted = [
        (f"key:{key.lookup_id}", settings.KNOWLEDGE_API_KEY_RATE_LIMIT if key_limit is None else key_limit),
        (
            f"tenant:{tenant.pk}:{tenant.slug}",
            settings.KNOWLEDGE_TENANT_RATE_LIMIT if tenant_limit is None else tenant_limit,
        ),
    ]
    return [(name, limit) for name, limit in wanted if limit > 0]


def _counts(names: list[str], window: int) -> list[int]:
    """This window's counts after counting this request (RedisError when Redis cannot answer)."""
    prefix = settings.KNOWLEDGE_RATE_LIMIT_PREFIX
    pipe = _client(settings.REDIS_URL).pipeline(transaction=False)
    for name in names:
        counter = f"{prefix}:{name}:{window}"
        pipe.incr(counter)
        pipe.expire(counter, WINDOW_SECONDS * 2)
    replies = pipe.execute()
    return [int(replies[i * 2]) for i in range(len(names))]


class RateLimit(BaseThrottle):
    """The key's and the tenant's requests per minute (see the module docstring)."""

    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        global _down_until
        client = request.user
        if not isinstance(client, ApiClient):
            return True
        limits = _limits(client)
        if not limits:
            return True
        now = time.time()
        if now < _down_until:
            return self._redis_down()
        try:
            counts = _counts([name for name, _ in limits], int(now // WINDOW_SECONDS))
        except redis.RedisError as exc:
            with _down_lock:
                _down_until = time.time() + BACKOFF_SECONDS
            logger.warning("rate limits: Redis unreachable (%s); failing %s", exc, _on_down())
            return self._redis_down()
        if all(count <= limit for count, (_, limit) in zip(counts, limits, strict=True)):
            return True
        self._wait = WINDOW_SECONDS - now % WINDOW_SECONDS
        return False

    def _redis_down(self) -> bool:
        if _on_down() == "closed":
            raise ServiceUnavailable("Rate limits cannot be checked right now; retry in a few seconds.")
        return True

    def wait(self) -> float | None:
        return self._wait


def _on_down() -> str:
    return str(settings.KNOWLEDGE_RATE_LIMIT_ON_REDIS_DOWN)


def forget_redis_outage() -> None:
    """Ask Redis again at the next request (tests)."""
    global _down_until
    with _down_lock:
        _down_until = 0.0
    _client.cache_clear()
