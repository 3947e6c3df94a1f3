"""Loaders that turn external sources (files, BEIR corpora, web pages) into source documents."""
