"""Embedders turn text into fixed-length vectors."""
