"""Connector kinds: extraction, the filesystem and web sources."""
