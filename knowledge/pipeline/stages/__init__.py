"""Query pipeline stages: query stages plan queries, the base retrieval fans out, hit stages refine."""
