"""The GitHub kind (REST v3): Markdown files, issues and pull requests, with repository access."""

from knowledge.connectors.saas.github.kind import GithubKind

__all__ = ["GithubKind"]
