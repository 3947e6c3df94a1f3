"""Local HTTP servers that speak hosted sources' published APIs, for the connector tests and benches."""
