"""Tests of retrieval_backends."""
