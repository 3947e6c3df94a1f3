"""The SSRF guard: redirects and links never reach loopback, link-local or metadata addresses."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

import httpcore
import pytest

from knowledge.connectors.web.fetch import Fetcher, FetchError, make_client
from knowledge.connectors.web.guard import AddressPolicy, BlockedAddress, GuardedBackend, forbidden
from knowledge.connectors.web.options import WebOptions
from knowledge.models import Connector, Document
from knowledge.services.connector_sync import connector_sync
from tests.factories import ConnectorFactory
from tests.knowledge.connectors.site import Site, article, serve

pytestmark = pytest.mark.django_db


@pytest.fixture
def site() -> Iterator[Site]:
    with serve(Site()) as running:
        running.pages["/"] = article("Seed", "The admin's own page.", ("/to-localhost.html",))
        running.pages["/landing.html"] = article("Landing", "Reached through a redirect.")
        running.redirects["/to-localhost.html"] = f"http://localhost:{running.port}/landing.html"
        running.redirects["/to-metadata.html"] = "http://169.254.169.254/latest/meta-data/"
        yield running


def connector_for(site: Site, **config: object) -> Connector:
    base = {"urls": [f"{site.origin}/"], "max_depth": 1, "delay_seconds": 0, "allowed_hosts": ["localhost"]}
    return ConnectorFactory.create(kind="web", config={**base, **config}, default_is_public=True)


def test_a_redirect_to_localhost_from_an_allowed_host_is_refused(site: Site) -> None:
    connector = connector_for(site)
    outcome = connector_sync(connector=connector)
    landing = f"{site.origin}/to-localhost.html"
    assert outcome.errors == (
        f"{landing}: refused to connect to localhost (127.0.0.1 is a loopback address)",
    )
    assert {r.host for r in site.requests} == {f"127.0.0.1:{site.port}"}  # no byte went to "localhost"
    assert set(connector.documents.values_list("external_id", flat=True)) == {f"{site.origin}/"}


def test_allow_private_addresses_lets_the_redirect_through(site: Site) -> None:
    connector = connector_for(site, allow_private_addresses=True)
    assert connector_sync(connector=connector).errors == ()
    page = Document.objects.get(connector=connector, external_id=f"{site.origin}/to-localhost.html")
    assert page.title == "Landing" and page.source_url == f"http://localhost:{site.port}/landing.html"
    assert f"localhost:{site.port}" in {r.host for r in site.requests}


class LoopbackOnly(httpcore.NetworkBackend):
    """The real network backend for loopback; any other address is recorded and never dialled."""

    def __init__(self) -> None:
        self.inner = httpcore.SyncBackend()
        self.dialled: list[str] = []

    def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        self.dialled.append(host)
        if not ipaddress.ip_address(host).is_loopback:
            raise AssertionError(f"the guard let a connection to {host} through")
        return self.inner.connect_tcp(host, port, *args, **kwargs)

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


@pytest.mark.parametrize("allow_private", [False, True])
def test_a_redirect_to_the_metadata_address_is_refused_before_dialling(
    site: Site, allow_private: bool
) -> None:
    options = WebOptions.from_config(
        {
            "urls": [f"{site.origin}/"],
            "allowed_hosts": ["169.254.169.254"],
            "allow_private_addresses": allow_private,
            "delay_seconds": 0,
        }
    )
    policy = AddressPolicy.for_hosts(options.seed_hosts, allow_private=allow_private)
    network = LoopbackOnly()
    with make_client(options, GuardedBackend(policy, network)) as client:
        fetcher = Fetcher(options, client)
        with pytest.raises(FetchError, match=r"169\.254\.169\.254 is a cloud metadata address"):
            fetcher.get(f"{site.origin}/to-metadata.html")
    assert network.dialled == ["127.0.0.1"]


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "127.8.9.10", "::1", "169.254.169.254", "169.254.1.1", "fe80::1", "10.1.2.3", "172.16.0.1"]
    + ["192.168.1.1", "100.64.0.1", "0.0.0.0", "fd00:ec2::254", "224.0.0.1", "::ffff:127.0.0.1"],
)
def test_non_global_addresses_are_forbidden(address: str) -> None:
    parsed = ipaddress.ip_address(address)
    mapped = getattr(parsed, "ipv4_mapped", None) or parsed
    assert forbidden(mapped, allow_private=False)


def test_global_addresses_pass_and_metadata_is_forbidden_even_when_private_is_allowed() -> None:
    assert forbidden(ipaddress.ip_address("93.184.216.34"), allow_private=False) is None
    assert forbidden(ipaddress.ip_address("10.0.0.1"), allow_private=True) is None
    assert (
        forbidden(ipaddress.ip_address("169.254.169.254"), allow_private=True) == "a cloud metadata address"
    )


def test_ip_literals_the_admin_wrote_are_trusted_but_names_are_checked() -> None:
    policy = AddressPolicy.for_hosts(["127.0.0.1", "localhost"], allow_private=False)
    assert policy.address_for("127.0.0.1", 80) == "127.0.0.1"
    with pytest.raises(BlockedAddress, match="loopback"):
        policy.address_for("localhost", 80)  # a name: it could resolve anywhere tomorrow
    with pytest.raises(BlockedAddress, match="loopback"):
        policy.address_for("127.0.0.2", 80)  # another literal than the admin's


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("169.254.1.1", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("64:ff9b::a00:1", "a NAT64 address"),  # 10.0.0.1 through a NAT64 gateway
        ("64:ff9b::808:808", "a NAT64 address"),
        ("64:ff9b:1::a00:1", "a NAT64 address"),
        ("2002:a00:1::1", "a 6to4 address"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "a Teredo address"),
        ("::10.0.0.1", "an IPv4-compatible address"),
        ("::127.0.0.1", "an IPv4-compatible address"),
        ("fec0::1", "a site-local address"),
    ],
)
def test_relay_forms_and_link_local_are_refused_even_when_private_is_allowed_or_written(
    address: str, why: str
) -> None:
    parsed = ipaddress.ip_address(address)
    for allow_private in (False, True):
        assert (forbidden(parsed, allow_private=allow_private) or "").startswith(why)
        policy = AddressPolicy.for_hosts([address], allow_private=allow_private)  # the admin wrote it
        with pytest.raises(BlockedAddress, match=why):
            policy.address_for(address, 80)


def test_loopback_and_private_addresses_pass_only_when_allowed() -> None:
    for address in ("::1", "10.0.0.1", "fd12::1", "127.0.0.1"):
        parsed = ipaddress.ip_address(address)
        assert forbidden(parsed, allow_private=False) and forbidden(parsed, allow_private=True) is None
