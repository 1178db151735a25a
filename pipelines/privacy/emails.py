"""E-mail addresses, including the ones written to get past filters.

Plain addresses match a permissive pattern (a mistyped address is still someone's). Obfuscated ones
spell the `@` or the dots: "juan at gmail dot com", "juan (at) gmail (dot) com", "juan [at]
gmail.com", "juan arroba gmail punto com", "juan at gmail.com", "juan%40gmail.com",
"juan&#64;gmail.com", "juan @ gmail.com", "juan@gmail dot com"; the full-width "juan＠gmail．com"
arrives here already plain (see `views`). Every spelling of one address has the same canonical
value, so it gets the same pseudonym.

A bare " at " is everywhere in English ("see the docs at docs.python.org"), so an address spelled
with it needs a second sign: a spelled dot ("dot", "punto") or a webmail domain ("at gmail.com").
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipelines.privacy.spans import Span
from pipelines.privacy.views import TextView

EMAIL = r"(?<![\w.+%\-])[\w.+%\-]+(?:'[\w.+%\-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w\-])"
"""A plain address as a regex, for validation suites; detection finds the same from each "@"."""


def _bracketed(word: str) -> str:
    return rf"[ \t]*[(\[{{<][ \t]*{word}[ \t]*[)\]}}>][ \t]*"


_AT_ENTITIES = (re.compile("%40"), re.compile(r"&(?:#0*64;|commat;)"))
"""Each opens with a literal, which the regex engine finds at memchr speed."""
_AT_BRACKETED = re.compile(r"[(\[{<][ \t]*(?:at|arroba)[ \t]*[)\]}>]")
_AT_BRACKET_CLOSE = re.compile(r"at[ \t]*[)\]}>]")
"""The end of "(at)", "[ at ]": opens with a literal, so the engine skips to candidates at memchr
speed."""
_DOT_TOKEN = (
    _bracketed("(?:dot|punto)") + r"|[ \t]+(?:dot|punto)[ \t]+|[ \t]?\.[ \t]?|&#0*46;|&period;"
)
_LABEL = r"[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?"
_DOMAIN = re.compile(
    rf"{_LABEL}(?:(?:{_DOT_TOKEN}){_LABEL})*?(?:{_DOT_TOKEN})([a-z]{{2,24}})(?![\w\-])"
)
_NEXT_LABEL = re.compile(rf"(?:{_DOT_TOKEN})([a-z]{{2,24}})(?![\w\-])")
_DOT_SPLIT = re.compile(_DOT_TOKEN)
_LOCAL_BEFORE = re.compile(r"(?<![\w.+%\-])[\w.+%\-]+(?:'[\w.+%\-]+)*\Z")
"""The local part before an "@": letters, digits, `.+%-`, and an apostrophe inside (o'sullivan@),
never one that opens it (`email = 'juan@...'`)."""
_LOCAL_WINDOW = 64
_PLAIN_DOT = re.compile(r"[ \t]?\.[ \t]?")
_PLAIN_DOMAIN = re.compile(r"(?:[a-z0-9](?:[a-z0-9\-]*[a-z0-9])?\.)+[a-z]{2,24}(?![\w\-])")

WEBMAIL = frozenset(
    """gmail googlemail hotmail outlook msn yahoo ymail icloud aol protonmail proton gmx yandex zoho fastmail
    tutanota telefonica movistar orange vodafone terra ono wanadoo libero qq 163 126""".split()  # noqa: SIM905
)
"""Providers whose name after a spelled "at" is sign enough that an address follows."""
WEBMAIL_PREFIXES = tuple(f"{name}." for name in WEBMAIL) + tuple(f"{name} " for name in WEBMAIL)
TLDS = frozenset(
    "com org net edu gov int mil info biz name pro dev app cat eus gal tech online xyz site cloud email mail".split()
)
"""Generic top-level domains; any two-letter one is a country's."""


def _plausible_tld(tld: str) -> bool:
    return len(tld) == 2 or tld in TLDS


def _widened(lower: str, start: int, end: int) -> tuple[int, int]:
    """The span of an "@" token with the blanks around it ("juan @ gmail.com")."""
    while start and lower[start - 1] in " \t":
        start -= 1
    while end < len(lower) and lower[end] in " \t":
        end += 1
    return start, end


def _positions(text: str, needle: str) -> Iterator[int]:
    """Where `needle` occurs: str.find runs at memchr speed, far faster than a regex scan."""
    i = text.find(needle)
    while i != -1:
        yield i
        i = text.find(needle, i + 1)


def _at_tokens(lower: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, kind) of each way of writing "@": plain, symbol (spaced or encoded), bracketed,
    spelled."""
    for i in _positions(lower, "@"):
        start, end = _widened(lower, i, i + 1)
        yield start, end, "plain" if (start, end) == (i, i + 1) else "symbol"
    for entity in _AT_ENTITIES:
        for m in entity.finditer(lower):
            yield (*_widened(lower, *m.span()), "symbol")
    if _AT_BRACKET_CLOSE.search(lower) or "arroba" in lower:
        for m in _AT_BRACKETED.finditer(lower):
            yield (*_widened(lower, *m.span()), "bracketed")
    # A bare " at " is everywhere in English: only a spelled dot or a webmail name after it counts.
    spelled_dot = None
    for word in (" at ", " arroba "):
        for i in _positions(lower, word):
            if spelled_dot is None:
                spelled_dot = "dot" in lower or "punto" in lower
            if spelled_dot or lower.startswith(WEBMAIL_PREFIXES, i + len(word)):
                yield (*_widened(lower, i, i + len(word)), "spelled")


def _domain_after(lower: str, pos: int) -> re.Match[str] | None:
    """The shortest dotted domain at `pos`, extended label by label while the last one is a TLD:
    "gmail dot co dot uk" whole, "gmail dot com. thanks" without the next sentence."""
    domain = _DOMAIN.match(lower, pos)
    while domain is not None:
        longer = _NEXT_LABEL.match(lower, domain.end())
        if longer is None or not _plausible_tld(longer.group(1)):
            return domain
        domain = _DOMAIN.fullmatch(lower, pos, longer.end())
    return None


def _obfuscated(view: TextView) -> Iterator[Span]:
    lower = view.lower
    for at_start, at_end, kind in _at_tokens(lower):
        local = _LOCAL_BEFORE.search(lower, max(0, at_start - _LOCAL_WINDOW), at_start)
        if local is None:
            continue
        domain = _PLAIN_DOMAIN.match(lower, at_end) if kind == "plain" else None
        if domain is None:
            domain = _domain_after(lower, at_end)
            if domain is None:
                continue
            dots = _DOT_SPLIT.findall(domain.group())
            labels = _DOT_SPLIT.split(domain.group())
            odd_dot = any(not _PLAIN_DOT.fullmatch(dot) for dot in dots)
            webmail, tld_ok = labels[0] in WEBMAIL, _plausible_tld(labels[-1])
            if kind == "plain":
                accepted = odd_dot and tld_ok  # "juan@gmail dot com"
            elif kind == "spelled":
                accepted = tld_ok and (odd_dot or webmail)
            else:
                accepted = (
                    tld_ok or webmail
                )  # "a @ b.conj" is matrix multiplication, "juan @ gmail.com" is not
            if not accepted:
                continue
        else:
            labels = domain.group().split(".")
        start, end = local.start(), domain.end()
        canonical = f"{local.group()}@{'.'.join(labels)}"
        yield Span(start, end, "EMAIL", view.text[start:end], canonical)


def detect_emails(view: TextView) -> list[Span]:
    """Every address in `view`, plain or obfuscated, found from the ways of writing its "@"."""
    return list(_obfuscated(view))
