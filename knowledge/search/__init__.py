"""Search: query stages plan queries, lanes retrieve per planned query on a shared executor, results
merge and hit stages refine them, all under one `SearchRun` (executor, deadline, warnings, trace)."""

from knowledge.search.engine import forget_configured_stages, search_chunks
from knowledge.search.lanes import LANES
from knowledge.search.results import SearchHit, SearchResult, Stages

__all__ = ["LANES", "SearchHit", "SearchResult", "Stages", "forget_configured_stages", "search_chunks"]
