"""Settings for the test suite: the production settings with the deterministic, model-free embedder."""

from config.settings import *  # noqa: F403

KNOWLEDGE_EMBEDDER = "hashing"

# Test-client tests render pages without a collectstatic: unhashed static URLs. The browser tests collect
# static files with the production storage (tests/browser/conftest.py) and serve them through WhiteNoise.
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405

# The suite makes many requests a minute with one key; the rate-limit tests set their limits per key.
KNOWLEDGE_API_KEY_RATE_LIMIT = 0
# Audit entries written in the test's own transaction (the background writer has its own test).
KNOWLEDGE_AUDIT_WRITES = "inline"
