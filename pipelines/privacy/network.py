"""IP addresses, v4 and v6, including IPv4-mapped IPv6 (`::ffff:10.0.0.1`), confirmed by
`ipaddress`.

Addresses that reach no one are left alone: the documentation ranges (RFC 5737's 192.0.2.0/24,
198.51.100.0/24 and 203.0.113.0/24, RFC 3849's 2001:db8::/32), loopback (127.0.0.1, ::1), the
unspecified address (0.0.0.0, ::), multicast groups and the reserved 240.0.0.0/4, where netmasks and
the broadcast address (255.255.255.0, 255.255.255.255) fall; and networks written with their prefix
("10.20.0.0/16"). Documentation and configuration are full of them, and none is a person's machine.
"""

from __future__ import annotations

import ipaddress
import re

from pipelines.privacy.matching import confirmed
from pipelines.privacy.spans import Span
from pipelines.privacy.views import TextView

_IPV4 = re.compile(r"\d(?<![\w.]\d)\d{0,2}(?:\.\d{1,3}){3}(?!\w|\.\d|-\d(?!\d{0,2}\.\d)|[~+]\w)")
"""Four dotted numbers, not a version with its package revision or pre-release ("alsa-lib
(1.2.1.2-2)", "8.6.11.1-1ubuntu1", "4.5.0.2~rc1"): a dash after an address opens a range only to
another address."""
_IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{1,4})?(?:%[\w.]+)?(?![\w:]|\.\d)"
)
_V4_HINT = re.compile(r"\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]")
_V6_HINT = re.compile(r":[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]")


DOCUMENTATION_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
)


def reaches_no_one(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """A documentation, loopback, unspecified, multicast or reserved address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return (
        address.is_loopback
        or address.is_unspecified
        or address.is_multicast
        or (address.version == 4 and address.is_reserved)
        or any(
            address in network
            for network in DOCUMENTATION_NETWORKS
            if network.version == address.version
        )
    )


def _ip(value: str) -> tuple[str, str] | None:
    address = value.split("%")[0]  # a zone index ("fe80::1%eth0") names an interface, not a host
    if ":" in address and (len(address) < 6 or sum(1 for group in address.split(":") if group) < 2):
        return None  # "::", "1::2": slicing in code, not addresses
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return None
    return None if reaches_no_one(parsed) else ("IP_ADDRESS", parsed.compressed)


_PREFIX_LENGTH = re.compile(r"/(\d{1,3})(?!\d)")


def _network(text: str, span: Span) -> bool:
    """Whether the address is the network of the prefix after it ("10.20.0.0/16", "2001:db8::/48"):
    a block of addresses in a configuration, not one machine. A /31 or /32 (/127, /128) is one."""
    prefix = _PREFIX_LENGTH.match(text, span.end)
    if prefix is None:
        return False
    try:
        network = ipaddress.ip_network(f"{span.canonical}/{prefix.group(1)}", strict=True)
    except ValueError:
        return False  # host bits set: "83.45.112.9/24" is a machine and its netmask
    return network.prefixlen < network.max_prefixlen - 1


def detect_ip_addresses(view: TextView) -> list[Span]:
    text = view.text
    found: list[Span] = []
    if "." in text and _V4_HINT.search(text):
        found += confirmed(_IPV4, text, _ip)
    if ":" in text and _V6_HINT.search(text):
        found += confirmed(_IPV6, text, _ip)
    return [span for span in found if not _network(text, span)]
