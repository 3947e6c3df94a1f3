"""Selectors: every read of the knowledge base goes through these functions."""
