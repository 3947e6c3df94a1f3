"""Settings for the test suite: the production settings with the deterministic, model-free embedder."""

from config.settings import *  # noqa: F403

KNOWLEDGE_EMBEDDER = "hashing"
