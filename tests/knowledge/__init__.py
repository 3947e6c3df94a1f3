"""Tests of knowledge."""
