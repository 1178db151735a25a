"""IP addresses, v4 and v6, including IPv4-mapped IPv6 (`::ffff:10.0.0.1`), confirmed by `ipaddress`."""

from __future__ import annotations

import ipaddress
import re

from pipelines.privacy.matching import confirmed
from pipelines.privacy.spans import Span
from pipelines.privacy.views import TextView

_IPV4 = re.compile(r"\d(?<![\w.]\d)\d{0,2}(?:\.\d{1,3}){3}(?!\w|\.\d)")
_IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{1,4})?(?:%[\w.]+)?(?![\w:]|\.\d)"
)
_V4_HINT = re.compile(r"\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]")
_V6_HINT = re.compile(r":[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]")


def _ip(value: str) -> tuple[str, str] | None:
    address = value.split("%")[0]  # a zone index ("fe80::1%eth0") names an interface, not a host
    if ":" in address and (len(address) < 6 or sum(1 for group in address.split(":") if group) < 2):
        return None  # "::", "1::2": slicing in code, not addresses
    try:
        return "IP_ADDRESS", ipaddress.ip_address(address).compressed
    except ValueError:
        return None


def detect_ip_addresses(view: TextView) -> list[Span]:
    text = view.text
    found: list[Span] = []
    if "." in text and _V4_HINT.search(text):
        found += confirmed(_IPV4, text, _ip)
    if ":" in text and _V6_HINT.search(text):
        found += confirmed(_IPV6, text, _ip)
    return found
