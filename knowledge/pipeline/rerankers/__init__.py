"""Rerankers reorder fused candidates (e.g. for diversity) and cut them to the limit."""
