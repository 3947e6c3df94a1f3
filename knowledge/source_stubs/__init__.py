"""Local HTTP servers that speak the hosted sources' published APIs (Confluence, Google Drive, GitHub,
Slack): the connector tests' stubs, the connector benchmark's sources and the demo's recorded syncs."""
