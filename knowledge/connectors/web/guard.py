"""The SSRF guard: every connection is checked at connect time, on the address actually dialled.

Addresses that are not globally routable (loopback, private, shared, reserved) are refused unless the
connector allows private addresses. Some are refused always, even then and even when the admin wrote
them: cloud metadata endpoints, every link-local address, and IPv6 forms that carry an IPv4 address
or reach a private network through a relay (NAT64, 6to4, Teredo, IPv4-compatible, site-local). The
one exception to the rest is a host the admin wrote as an IP literal in the connector's own URLs:
that address was chosen on purpose. A host *name* is always checked, so a redirect or link to
`localhost`, or a name that resolves to 169.254.169.254, is refused. The check runs inside
httpcore's network backend and connects to the very address it checked, so DNS rebinding cannot slip
a second answer past it.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
)
# Refused whatever the connector allows: (network, why).
ALWAYS_REFUSED = tuple(
    (ipaddress.ip_network(network), why)
    for network, why in (
        ("169.254.0.0/16", "a link-local address"),
        ("fe80::/10", "a link-local address"),
        ("64:ff9b::/96", "a NAT64 address (it carries an IPv4 address)"),
        ("64:ff9b:1::/48", "a NAT64 address (it carries an IPv4 address)"),
        ("2002::/16", "a 6to4 address (it carries an IPv4 address)"),
        ("2001::/32", "a Teredo address (it carries an IPv4 address)"),
        ("fec0::/10", "a site-local address"),
    )
)
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


class BlockedAddress(httpcore.ConnectError):
    """A connection the guard refused (httpx reports it as a ConnectError with this message)."""


def _as_ip(host: str) -> IPAddress | None:
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def always_refused(address: IPAddress) -> str | None:
    """Why `address` is refused whatever the connector allows and whoever wrote it (None otherwise)."""
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    for network, why in ALWAYS_REFUSED:
        if address.version == network.version and address in network:
            return why
    if address.version == 6 and address in IPV4_COMPATIBLE and int(address) > 1:  # not :: or ::1
        return "an IPv4-compatible address (it carries an IPv4 address)"
    return None


def forbidden(address: IPAddress, *, allow_private: bool) -> str | None:
    """Why the guard refuses `address` (None when it may be dialled)."""
    always = always_refused(address)
    if always:
        return always
    if allow_private:
        return None
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if not address.is_global or address.is_multicast:
        return "a private or reserved address"
    return None


@dataclass(frozen=True)
class AddressPolicy:
    """Which addresses a connector's requests may reach (see the module docstring)."""

    trusted_literals: frozenset[IPAddress] = frozenset()
    allow_private: bool = False

    @classmethod
    def for_hosts(cls, hosts: Iterable[str], *, allow_private: bool) -> AddressPolicy:
        literals = frozenset(ip for ip in (_as_ip(h) for h in hosts) if ip is not None)
        return cls(trusted_literals=literals, allow_private=allow_private)

    def address_for(self, host: str, port: int) -> str:
        """The address to dial for host:port; BlockedAddress when the guard refuses it."""
        literal = _as_ip(host)
        if literal is not None and literal in self.trusted_literals and not always_refused(literal):
            return str(literal)
        candidates = [literal] if literal is not None else _resolve(host, port)
        for address in candidates:
            reason = forbidden(address, allow_private=self.allow_private)
            if reason:
                raise BlockedAddress(f"refused to connect to {host} ({address} is {reason})")
        return str(candidates[0])


def _resolve(host: str, port: int) -> list[IPAddress]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise httpcore.ConnectError(f"cannot resolve {host}: {exc.strerror}") from exc
    addresses = [_as_ip(str(info[4][0])) for info in infos]
    found = [a for a in dict.fromkeys(addresses) if a is not None]
    if not found:
        raise httpcore.ConnectError(f"cannot resolve {host}")
    return found


class GuardedBackend(httpcore.NetworkBackend):
    """httpcore's network backend, dialling only addresses the policy allows."""

    def __init__(self, policy: AddressPolicy, inner: httpcore.NetworkBackend | None = None) -> None:
        self.policy = policy
        self.inner = inner or httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        address = self.policy.address_for(host, port)
        return self.inner.connect_tcp(address, port, timeout, local_address, socket_options)

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        raise BlockedAddress("unix sockets are not reachable from a web connector")

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport over a guarded connection pool (no proxies from the environment)."""

    def __init__(self, backend: GuardedBackend) -> None:
        super().__init__(trust_env=False)
        # httpx has no public hook for the network backend; its pool is the documented httpcore one.
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=10,
            max_keepalive_connections=5,
            network_backend=backend,
        )
