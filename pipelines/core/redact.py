"""Credentials out of every URL ragwatch prints, logs or stores.

A URL may carry a password (`postgresql://user:pw@host/db`) or a token in its query string
(`?token=…`, `?sig=…`); both are replaced by `***` before the URL reaches a terminal, a log, the
results DB, a report, a file name or a metric label. What is left still says which service it is.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

MASK = "***"
SECRET_QUERY_KEY = re.compile(
    r"(token|key|secret|pass|pwd|auth|sig|session|sid|code|credential|jwt|bearer|cookie)",
    re.IGNORECASE,
)
"""Query parameters whose value is treated as a secret: token, api_key, X-Amz-Signature, code,
session…"""
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def redact_url(url: str) -> str:
    """`url` with its password and token-like query values replaced by `***` (the user name is
    kept)."""
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return MASK
    head, question, rest = url.partition("?")
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, has_password, _ = userinfo.partition(":")
        head = head.replace(
            f"//{netloc}", f"//{user}:{MASK}@{host}" if has_password else f"//{MASK}@{host}", 1
        )
    query, hash_sign, fragment = rest.partition("#")
    pairs = [pair.partition("=") for pair in query.split("&")] if query else []
    query = "&".join(
        f"{k}={MASK}" if SECRET_QUERY_KEY.search(k) and eq else k + eq + v for k, eq, v in pairs
    )
    return head + question + query + hash_sign + fragment


def has_credentials(url: str) -> bool:
    """Does `url` carry a user, a password or a token-like query value?"""
    try:
        parts = urlsplit(url)
    except ValueError:
        return True  # unreadable: treat as unsafe rather than guess
    return "@" in parts.netloc or any(
        SECRET_QUERY_KEY.search(k) for k, _ in parse_qsl(parts.query, keep_blank_values=True)
    )


def redact_text(text: str) -> str:
    """Every URL inside free text (an error message, a log line) redacted."""
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)
