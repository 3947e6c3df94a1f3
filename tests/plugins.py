"""Test helper: set a pipeline alias's options in settings.KNOWLEDGE_PLUGINS (as the environment would)."""

from __future__ import annotations

import copy
from typing import Any


def plugin_options(settings: Any, layer: str, alias: str, **options: Any) -> None:
    """Lay `options` over the alias's in a copy of the table (pytest-django's `settings` restores it)."""
    table = copy.deepcopy(settings.KNOWLEDGE_PLUGINS)
    table[layer][alias]["OPTIONS"].update(options)
    settings.KNOWLEDGE_PLUGINS = table
