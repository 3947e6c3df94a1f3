"""Connector kinds by name (like Django's backends: one class per integration, looked up by its key)."""

from __future__ import annotations

from functools import cache

from django.utils.module_loading import import_string

from knowledge.connectors.base import ConnectorKind

KINDS = {
    "api": "knowledge.connectors.api.ApiKind",
    "filesystem": "knowledge.connectors.filesystem.FilesystemKind",
    "web": "knowledge.connectors.web.WebKind",
}


@cache
def connector_kind(name: str) -> ConnectorKind:
    """The kind's (stateless) instance; KeyError for an unknown kind."""
    cls = import_string(KINDS[name])
    assert issubclass(cls, ConnectorKind)
    return cls()


def kind_choices() -> list[tuple[str, str]]:
    return [(name, connector_kind(name).label) for name in KINDS]
