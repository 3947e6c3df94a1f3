"""Chunkers split a document into retrievable passages."""
