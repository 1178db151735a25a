"""What the rules read: look-alikes folded, escapes decoded, pseudonyms masked."""

from __future__ import annotations

import re
import unicodedata

_PSEUDONYM = re.compile(r"\[[A-Z][A-Z_]*_[0-9a-f]{8}\]")
MASK = "\ue000"
"""What a pseudonym becomes before the rules run: neither a word character nor a blank."""
_JSON_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|([nrt\"\\/]))")
_ESCAPED = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\", "/": "/"}
_INVISIBLE = "\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff"
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63"
_UNIFIED = {**dict.fromkeys(map(ord, _INVISIBLE)), **dict.fromkeys(map(ord, _DASHES), "-")}
_INVISIBLE_OR_DASH = re.compile(f"[{_INVISIBLE}{_DASHES}]")
NOT_MASK = rf"(?!{MASK})"


def normalized(text: str) -> str:
    """Look-alikes folded (NFKC: full-width "＠" to "@"), invisible characters dropped, dashes
    unified, `\\uXXXX` escapes decoded, pseudonyms masked."""
    if "\\" in text:
        text = _JSON_ESCAPE.sub(
            lambda m: chr(int(m.group(1), 16)) if m.group(1) else _ESCAPED[m.group(2)], text
        )
    if (
        not text.isascii()
    ):  # ASCII is its own NFKC form and holds no invisible character or odd dash
        text = unicodedata.normalize("NFKC", text)
        if _INVISIBLE_OR_DASH.search(text):  # translate() looks up every character: 40x the search
            text = text.translate(_UNIFIED)
    return _PSEUDONYM.sub(MASK, text)
