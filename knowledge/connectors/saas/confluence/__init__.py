"""The Confluence Cloud kind (REST v2, with v1 for restrictions and group members)."""

from knowledge.connectors.saas.confluence.kind import ConfluenceKind

__all__ = ["ConfluenceKind"]
