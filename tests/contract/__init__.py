"""The shared retrieval-backend contract suite."""
