"""The Slack kind (Web API): channel messages as thread and day documents, channel members as ACLs."""

from knowledge.connectors.saas.slack.kind import SlackKind

__all__ = ["SlackKind"]
