"""Pluggable retrieval backends behind one contract, chosen by KNOWLEDGE_RETRIEVAL_BACKEND."""
