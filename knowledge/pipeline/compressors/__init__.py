"""Compressors trim the result set's text to a token budget before it reaches an LLM."""
