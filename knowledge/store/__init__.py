"""The canonical store: documents, chunks, vectors, grants and sync state in PostgreSQL, the source of
truth. Every raw statement against the knowledge tables lives in this package (or a migration); table
names come from the models' `_meta.db_table`. `search/` holds the statements of PostgreSQL's own
search index, which lives in the same tables."""
