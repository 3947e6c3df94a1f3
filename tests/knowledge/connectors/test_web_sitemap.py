"""Sitemap parsing: url sets, indexes, gzip, and untrusted XML (no entities)."""

from __future__ import annotations

import gzip

import pytest

from knowledge.connectors.web.sitemap import SitemapError, parse

URLSET = (
    b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    b"<url><loc> https://d.example/a </loc><lastmod>2024-01-01</lastmod></url><url><loc>https://d.example/b</loc></url>"
    b"</urlset>"
)


def test_a_url_set_lists_its_pages() -> None:
    assert parse(URLSET) == (["https://d.example/a", "https://d.example/b"], [])


def test_an_index_lists_its_sitemaps_and_gzip_is_read() -> None:
    index = (
        b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sitemap><loc>https://d.example/s1.xml.gz</loc></sitemap></sitemapindex>"
    )
    assert parse(gzip.compress(index)) == ([], ["https://d.example/s1.xml.gz"])
    assert parse(gzip.compress(URLSET))[0] == ["https://d.example/a", "https://d.example/b"]


def test_entities_are_not_expanded_and_garbage_is_an_error() -> None:
    hostile = (
        b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>&x;</loc></url></urlset>'
    )
    pages, _ = parse(hostile)
    assert not any("root:" in page for page in pages)
    with pytest.raises(SitemapError, match="not a sitemap"):
        parse(b"<html>not xml")
