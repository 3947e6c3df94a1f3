"""The web kind against a real local site: robots.txt, sitemaps, depth, conditional GET, limits."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from knowledge.connectors.web import WebKind
from knowledge.models import Chunk, ChunkEmbedding, Connector, Document
from knowledge.services.connector_sync import connector_sync
from knowledge.services.writes import WriteStats
from tests.factories import ConnectorFactory
from tests.knowledge.connectors.site import Site, article, serve

pytestmark = pytest.mark.django_db


def urlset(urls: list[str], tag: str = "urlset", item: str = "url") -> str:
    entries = "".join(f"<{item}><loc>{u}</loc></{item}>" for u in urls)
    return (
        f'<?xml version="1.0"?><{tag} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</{tag}>'
    )


@pytest.fixture
def site() -> Iterator[Site]:
    with serve(Site()) as running:
        origin, other = running.origin, f"http://localhost:{running.port}"
        running.pages.update(
            {
                "/robots.txt": "User-agent: *\nDisallow: /private/\n",
                "/sitemap_index.xml": urlset([f"{origin}/sitemap-pages.xml"], "sitemapindex", "sitemap"),
                "/sitemap-pages.xml": urlset(
                    [f"{origin}/etag.html", f"{origin}/lastmod.html", f"{origin}/private/secret.html"]
                    + [f"{other}/offhost.html"]
                ),
                "/": article(
                    "Home",
                    "Welcome to the handbook site of the platform team.",
                    ("/about.html", "/private/hidden.html", f"{other}/external.html", "/redirect-away.html")
                    + ("/huge.html", "/slow.html", "/logo.png"),
                ),
                "/about.html": article("About", "The platform team owns the crawler.", ("/deep.html",)),
                "/deep.html": article("Deep", "Two hops away: deeper than max_depth."),
                "/etag.html": article("Etag page", "Served with an entity tag."),
                "/lastmod.html": article("Lastmod page", "Served with a Last-Modified date."),
                "/slow.html": article("Slow page", "Fast on the first sync."),
                "/private/secret.html": article("Secret", "Listed in the sitemap, disallowed by robots."),
                "/private/hidden.html": article("Hidden", "Linked, disallowed by robots."),
            }
        )
        running.redirects["/redirect-away.html"] = f"{other}/landing.html"
        yield running


def web_connector(site: Site, **config: object) -> Connector:
    defaults = {
        "urls": [f"{site.origin}/"],
        "sitemaps": [f"{site.origin}/sitemap_index.xml"],
        "max_depth": 1,
        "delay_seconds": 0,
        "timeout_seconds": 1,
        "max_page_bytes": 1_000_000,
    }
    return ConnectorFactory.create(kind="web", config={**defaults, **config}, default_is_public=True)


def sync_with_state(connector: Connector) -> WriteStats:
    """A real sync (it reads back the stored validators); what its write did."""
    outcome = connector_sync(connector=connector)
    assert outcome.claimed and outcome.stats is not None
    return outcome.stats


def live(connector: Connector, site: Site) -> set[str]:
    ids = connector.documents.filter(deleted_at__isnull=True).values_list("external_id", flat=True)
    return {i.removeprefix(site.origin) for i in ids}


CRAWLED = {"/", "/about.html", "/etag.html", "/lastmod.html", "/slow.html"}


def test_a_crawl_follows_sitemaps_and_links_but_never_robots_disallowed_or_off_host_pages(site: Site) -> None:
    connector = web_connector(site)
    outcome = connector_sync(connector=connector)
    assert live(connector, site) == CRAWLED
    paths = {r.path for r in site.requests}
    assert not any(p.startswith("/private/") for p in paths)  # never even requested
    assert {r.host for r in site.requests} == {f"127.0.0.1:{site.port}"}  # localhost never reached
    assert "/deep.html" not in paths and "/logo.png" not in paths
    errors = "\n".join(outcome.errors)
    assert f"{site.origin}/huge.html: larger than the 1000000-byte limit" in errors
    assert (
        f"{site.origin}/redirect-away.html: redirected off-host to localhost (not in allowed_hosts)" in errors
    )
    home = Document.objects.get(connector=connector, external_id=f"{site.origin}/")
    assert home.title == "Home" and home.content.startswith("# Home\n") and "Footer" not in home.content
    assert home.metadata["http"]["etag"] and f"{site.origin}/about.html" in home.metadata["links"]
    assert home.is_public and home.acl_origin == "connector"  # the connector's default ACL


def test_the_second_sync_is_conditional_and_re_embeds_nothing(site: Site) -> None:
    connector = web_connector(site)
    sync_with_state(connector)
    chunks = dict(Chunk.objects.filter(connector=connector).values_list("id", "content"))
    vectors = set(ChunkEmbedding.objects.filter(chunk__connector=connector).values_list("id", "created_at"))
    site.requests.clear()
    listing = sync_with_state(connector)
    stored = {r for r in site.page_requests() if r.path in CRAWLED}
    assert {r.path for r in stored} == CRAWLED and all(r.conditional for r in stored)
    assert {r.if_modified_since for r in stored if r.path == "/lastmod.html"} == {
        "Wed, 21 Oct 2015 07:28:00 GMT"
    }
    unconditional = {r.path for r in site.page_requests() if not r.conditional}
    assert unconditional == {"/huge.html", "/redirect-away.html"}  # never stored, so nothing to validate
    assert listing.documents == 0 and live(connector, site) == CRAWLED  # 304s: fetched nothing, kept all
    assert dict(Chunk.objects.filter(connector=connector).values_list("id", "content")) == chunks
    assert (
        set(ChunkEmbedding.objects.filter(chunk__connector=connector).values_list("id", "created_at"))
        == vectors
    )


def test_a_changed_page_is_fetched_again_in_full(site: Site) -> None:
    connector = web_connector(site)
    sync_with_state(connector)
    site.pages["/etag.html"] = article("Etag page", "A new version with new words.")
    listing = sync_with_state(connector)
    assert listing.documents == 1 and listing.rechunked == {f"{site.origin}/etag.html"}
    page = Document.objects.get(connector=connector, external_id=f"{site.origin}/etag.html")
    assert "new words" in page.content


def test_a_page_that_times_out_is_reported_and_not_deleted(site: Site) -> None:
    connector = web_connector(site)
    connector_sync(connector=connector)
    site.slow_seconds = 3
    outcome = connector_sync(connector=connector)
    assert f"{site.origin}/slow.html: timed out after 1 s (ReadTimeout)" in outcome.errors
    assert outcome.deleted == 0 and live(connector, site) == CRAWLED


def test_a_page_gone_from_the_site_is_removed_after_a_complete_listing(site: Site) -> None:
    connector = web_connector(site)
    connector_sync(connector=connector)
    del site.pages["/about.html"]
    outcome = connector_sync(connector=connector)
    assert outcome.deleted == 1 and live(connector, site) == CRAWLED - {"/about.html"}


def test_an_unreadable_sitemap_or_robots_txt_removes_nothing(site: Site) -> None:
    connector = web_connector(site)
    connector_sync(connector=connector)
    site.statuses["/sitemap-pages.xml"] = 500
    outcome = connector_sync(connector=connector)
    assert any("sitemap-pages.xml: HTTP 500" in e for e in outcome.errors)
    assert outcome.deleted == 0 and live(connector, site) == CRAWLED
    site.statuses["/robots.txt"] = 503
    site.requests.clear()
    outcome = connector_sync(connector=connector)
    assert any("robots.txt could not be read (HTTP 503)" in e for e in outcome.errors)
    assert [r.path for r in site.requests] == ["/robots.txt"]  # nothing else, not even the sitemap
    assert outcome.deleted == 0 and live(connector, site) == CRAWLED


def test_the_page_limit_stops_the_crawl_without_removing_anything(site: Site) -> None:
    connector = web_connector(site)
    connector_sync(connector=connector)
    connector.config = {**connector.config, "max_pages": 2}
    connector.save()
    outcome = connector_sync(connector=connector)
    assert any("stopped at max_pages after 2 pages" in e for e in outcome.errors)
    assert outcome.deleted == 0 and live(connector, site) == CRAWLED


def test_requests_to_one_host_are_spaced_by_the_delay(site: Site) -> None:
    connector = web_connector(site, sitemaps=[], max_depth=0, delay_seconds=0.3)
    connector.config["urls"] = [f"{site.origin}/{p}" for p in ("etag.html", "lastmod.html", "about.html")]
    connector.save()
    connector_sync(connector=connector)
    times = [t for _, t in site.times]
    assert len(times) == 4  # robots.txt and three pages
    assert min(b - a for a, b in zip(times, times[1:], strict=False)) >= 0.28


def test_noindex_pages_are_not_ingested_and_nofollow_links_not_followed(site: Site) -> None:
    site.pages["/"] = (
        '<html><head><meta name="robots" content="noindex"></head><body>'
        '<a href="/etag.html">ok</a> <a rel="nofollow" href="/about.html">no</a></body></html>'
    )
    connector = web_connector(site, sitemaps=[])
    connector_sync(connector=connector)
    assert live(connector, site) == {"/etag.html"}


def test_config_is_validated_with_clear_messages() -> None:
    kind = WebKind()
    assert kind.validate_config({"urls": ["https://docs.example.com/"]}) == {}
    assert kind.validate_config({"sitemaps": ["https://docs.example.com/sitemap.xml"], "max_depth": 2}) == {}
    cases: dict[str, dict[str, object]] = {
        "urls: required": {},
        "urls: must be a list of http(s) URLs": {"urls": ["ftp://x/"]},
        "max_depth: must be an integer from 0 to 10": {"urls": ["https://x/"], "max_depth": 11},
        "delay_seconds: must be a number from 0 to 60": {"urls": ["https://x/"], "delay_seconds": "1"},
        "allowed_hosts: must be a list of host names": {"urls": ["https://x/"], "allowed_hosts": ["a/b"]},
        "allow_private_addresses: must be true or false": {
            "urls": ["https://x/"],
            "allow_private_addresses": 1,
        },
        "unknown keys": {"urls": ["https://x/"], "depth": 1},
    }
    for message, config in cases.items():
        assert message in kind.validate_config(config)["config"], config


def test_raising_the_depth_refetches_pages_whose_links_were_never_stored(site: Site) -> None:
    connector = web_connector(site, max_depth=0)
    sync_with_state(connector)
    assert live(connector, site) == {"/", "/etag.html", "/lastmod.html"}
    connector.config = {**connector.config, "max_depth": 1}
    connector.save()
    site.requests.clear()
    sync_with_state(connector)
    assert not next(r for r in site.requests if r.path == "/").conditional
    assert live(connector, site) == CRAWLED


def test_a_page_in_a_charset_python_does_not_know_is_read_as_utf8(site: Site) -> None:
    site.pages["/bogus.txt"] = "Plain notes about the ferry timetable, café included."
    site.content_types["/bogus.txt"] = "text/plain; charset=x-bogus"
    site.pages["/rot.html"] = article("Rot page", "Served in a codec that is not a text encoding.")
    site.content_types["/rot.html"] = "text/html; charset=rot13"
    connector = web_connector(site, sitemaps=[], max_depth=0)
    connector.config["urls"] = [f"{site.origin}/bogus.txt", f"{site.origin}/rot.html"]
    connector.save()
    outcome = connector_sync(connector=connector)
    assert outcome.errors == () and live(connector, site) == {"/bogus.txt", "/rot.html"}
    notes = Document.objects.get(connector=connector, external_id=f"{site.origin}/bogus.txt")
    assert notes.content == "Plain notes about the ferry timetable, café included."


def test_child_sitemaps_off_the_connectors_hosts_are_never_fetched(site: Site) -> None:
    other = f"http://localhost:{site.port}"
    site.pages["/sitemap_index.xml"] = urlset(
        [f"{site.origin}/sitemap-pages.xml", f"{other}/sitemap-pages.xml"], "sitemapindex", "sitemap"
    )
    connector = web_connector(site)
    outcome = connector_sync(connector=connector)
    assert f"sitemap {other}/sitemap-pages.xml: not read, its host is not one of the connector's hosts" in (
        outcome.errors
    )
    assert {r.host for r in site.requests} == {f"127.0.0.1:{site.port}"}
    assert live(connector, site) == CRAWLED


def test_the_sitemap_phase_obeys_max_seconds(site: Site) -> None:
    site.pages["/sitemap_index.xml"] = urlset(
        [f"{site.origin}/sitemap-pages.xml", f"{site.origin}/sitemap-more.xml"], "sitemapindex", "sitemap"
    )
    site.pages["/sitemap-more.xml"] = urlset([f"{site.origin}/about.html"])
    site.delays["/sitemap-pages.xml"] = 1.5
    connector = web_connector(site, max_seconds=1, urls=[], timeout_seconds=5)
    outcome = connector_sync(connector=connector)
    assert any("sitemap-more.xml: not read, max_seconds was reached" in e for e in outcome.errors)
    assert "/sitemap-more.xml" not in [r.path for r in site.requests] and outcome.deleted == 0
