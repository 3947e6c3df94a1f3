"""Connector kinds by name: the aliases of settings.KNOWLEDGE_PLUGINS["connector"], one stateless
class per integration, loaded by the shared plugin loader."""

from __future__ import annotations

from knowledge.connectors.base import ConnectorKind
from knowledge.plugins import Plugins, process_singleton

KINDS: Plugins[ConnectorKind] = Plugins("connector kind", ConnectorKind, "KNOWLEDGE_PLUGINS", "connector")


@process_singleton
def connector_kind(name: str) -> ConnectorKind:
    """The kind's (stateless) instance; KeyError for an unknown kind."""
    if name not in KINDS.aliases():
        raise KeyError(name)
    return KINDS.build(KINDS.spec(name, f"connector kind {name!r}"))


def kind_names() -> list[str]:
    return list(KINDS.aliases())


def kind_choices() -> list[tuple[str, str]]:
    return [(name, connector_kind(name).label) for name in kind_names()]
