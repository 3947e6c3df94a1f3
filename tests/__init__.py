"""Tests of the whole project, on the real PostgreSQL, Redis and OpenSearch."""
