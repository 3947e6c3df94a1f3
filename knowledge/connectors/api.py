"""The push kind: clients write documents through the API; there is nothing to pull."""

from __future__ import annotations

from typing import Any, ClassVar

from knowledge.connectors.base import ConnectorKind


class ApiKind(ConnectorKind):
    name = "api"
    label = "API push"
    pulls: ClassVar[bool] = False

    def validate_config(self, config: dict[str, Any]) -> dict[str, str]:
        if config:
            return {"config": "an api (push) connector takes no configuration; leave it {}"}
        return {}
