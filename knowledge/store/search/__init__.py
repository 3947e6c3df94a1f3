"""PostgreSQL's search statements over the canonical tables: BM25 and ts_rank keyword lanes, the
filtered vector lane and its visibility estimates (used by the `postgres` retrieval backend)."""
