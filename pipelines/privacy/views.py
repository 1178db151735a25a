"""The text detectors read: PII written to dodge filters, brought back to plain form, offsets kept.

Real traffic hides values in three ways that plain regexes miss:
- JSON-escaped text inside a string (`Jos\\u00e9`, `\\"password\\": \\"...\\"`), as in a raw line or
  a metadata value that was serialized twice;
- invisible characters inside a value (zero-width space, soft hyphen, word joiner);
- look-alike characters: full-width `＠`, every kind of dash (en, em, U+2011, minus sign),
  non-breaking and thin spaces.

`TextView` is the text with escapes decoded, invisible characters dropped and look-alikes mapped to
ASCII, plus the offset of each of its characters in the original, so a span found in the view maps
back onto exactly the original characters to replace.
"""

from __future__ import annotations

import bisect
import functools
import re

_JSON_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "b": "\b",
    "f": "\f",
    "/": "/",
    "\\": "\\",
    '"': '"',
}
_HIDDEN = "\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff"
_ESCAPED_OR_HIDDEN = re.compile(
    r"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|[nrtbf/\\\"])"
    f"|[{_HIDDEN}]"
)

_LOOKALIKES = {
    **{chr(c): " " for c in (0x00A0, 0x1680, *range(0x2000, 0x200B), 0x202F, 0x205F, 0x3000)},
    **{chr(c): "-" for c in (*range(0x2010, 0x2016), 0x2212, 0xFE58, 0xFE63, 0xFF0D)},
    **{chr(c): chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)},  # full-width ASCII
    "\ufe6b": "@",  # small commercial at
    "\u3002": ".",  # ideographic full stop, a common "dot" in obfuscated addresses
    "\uff61": ".",
}
_LOOKALIKE = re.compile("[" + "".join(sorted(_LOOKALIKES)) + "]")
_SPECIAL = re.compile("[\\\\" + _HIDDEN + "".join(sorted(_LOOKALIKES)) + "]")


def _decode_escape(escape: str) -> str | None:
    if escape[1] != "u":
        return _JSON_ESCAPES[escape[1]]
    if len(escape) == 12:  # a surrogate pair: one character outside the BMP
        high, low = int(escape[2:6], 16), int(escape[8:12], 16)
        return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
    code = int(escape[2:], 16)
    # A lone surrogate is not a character; left as written it still reads as six plain characters.
    return None if 0xD800 <= code <= 0xDFFF else chr(code)


class TextView:
    """`text` is what detectors scan: the same characters as `original` unless escapes, hidden or
    look-alike characters occur. Offsets map back through breakpoints, one per decoded escape."""

    __slots__ = ("original", "text", "_breaks", "_cache")

    def __init__(
        self,
        original: str,
        text: str,
        breaks: tuple[tuple[int, ...], tuple[int, ...]] | None = None,
    ):
        self.original = original
        self.text = text
        self._breaks = breaks
        """(view offsets, original offsets) where the two stop moving together; None when they never
        do."""
        self._cache: dict = {}

    @classmethod
    def of(cls, original: str) -> TextView:
        if original.isascii() and "\\" not in original:  # isascii is O(1) in CPython
            return cls(original, original)
        if not original.isascii() and not _SPECIAL.search(original):
            return cls(original, original)
        text, breaks = _unescape(original)
        if _LOOKALIKE.search(text):
            text = _LOOKALIKE.sub(
                lambda m: _LOOKALIKES[m.group()], text
            )  # one for one: offsets hold
        return cls(original, text, breaks)

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        if self._breaks is None:
            return start, end
        return self._original_offset(start), self._original_offset(end)

    def _original_offset(self, offset: int) -> int:
        view_offsets, original_offsets = self._breaks
        i = bisect.bisect_right(view_offsets, offset) - 1
        return offset if i < 0 else original_offsets[i] + (offset - view_offsets[i])

    @property
    def lower(self) -> str:
        """`text` lowercased with offsets intact, for case-insensitive scans at full regex speed."""
        lower = self._cache.get("lower")
        if lower is None:
            lower = self._cache["lower"] = lowercase(self.text)
        return lower

    @property
    def words(self) -> list[str]:
        """`lower.split()`: its words sit at the same offsets in `text`, lower-casing keeps
        lengths."""
        words = self._cache.get("words")
        if words is None:
            words = self._cache["words"] = self.lower.split()
        return words

    @property
    def word_set(self) -> set[str]:
        """The distinct `words`, for detectors that look for words they know ("calle", "soy")."""
        word_set = self._cache.get("word_set")
        if word_set is None:
            word_set = self._cache["word_set"] = set(self.words)
        return word_set

    def memo(self, name: str, compute):
        """A value computed once per text and shared by the detectors that need it."""
        if name not in self._cache:
            self._cache[name] = compute(self)
        return self._cache[name]


def _unescape(original: str) -> tuple[str, tuple[tuple[int, ...], tuple[int, ...]] | None]:
    """The text with escapes decoded and hidden characters dropped, and the offsets where view and
    original part ways: after each change, view offset v maps to original offset o + (v - v0)."""
    pieces: list[str] = []
    view_offsets: list[int] = []
    original_offsets: list[int] = []
    cursor = length = 0
    for m in _ESCAPED_OR_HIDDEN.finditer(original):
        decoded = "" if len(m.group()) == 1 else _decode_escape(m.group())
        if decoded is None:
            continue
        pieces.append(original[cursor : m.start()])
        length += m.start() - cursor
        pieces.append(decoded)
        # The decoded character stands for the whole escape: it maps to where the escape starts,
        # and what follows it maps to where the escape ends.
        if decoded:
            view_offsets.append(length)
            original_offsets.append(m.start())
            length += len(decoded)
        view_offsets.append(length)
        original_offsets.append(m.end())
        cursor = m.end()
    if not pieces:
        return original, None
    pieces.append(original[cursor:])
    return "".join(pieces), (tuple(view_offsets), tuple(original_offsets))


@functools.lru_cache(maxsize=4096)
def _lower_char(c: str) -> str:
    lowered = c.lower()
    return lowered if len(lowered) == 1 else c


def lowercase(text: str) -> str:
    """`text.lower()`, except characters that lowercase to two ("İ") stay, so offsets still line
    up."""
    lower = text.lower()
    return lower if len(lower) == len(text) else "".join(map(_lower_char, text))
