"""Tests of the REST API."""
