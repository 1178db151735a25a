"""Per rule, a cheap necessary condition: text that fails it cannot match the rule."""

from __future__ import annotations

import re
from collections.abc import Callable

from pipelines.privacy.residual.addresses import ES_CAPITALISED_TYPES, ES_STREET_TYPES
from pipelines.privacy.residual.rules import WEBMAIL

# What a text must hold for a rule to have a chance: Most text trips no rule, and a rule's regex
# tries every position of it: scanning 5-10 KB traces was most of the sampling step. Each screen
# below is a necessary condition of its rule, read off the pattern (a character every match holds, a
# digit count, a keyword every alternative starts with), and cheap: substring tests run in C at
# memory speed. A screen may pass text its rule then clears; it must never fail text its rule would
# flag, so a rule's pattern and its screen change together.
# tests/unit/pipelines/privacy/residual/test_screens.py checks both agree on drawn and hand-made
# text.

_DIGIT = re.compile(r"\d")
NINE_DIGITS_APART = re.compile(r"\d(?:[ .\-/()_]{0,4}\d){8}")
"""Nine digits, at most the four characters a run allows between two groups (")", two separators,
"(") apart: every long run holds this, and the date masking and run splitting cost 5x this
search."""
CASE_FOLDS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})
"""The characters other than an ASCII letter's own two cases that re.IGNORECASE matches it with
("İ", "ı" for "i", "ſ" for "s"): folded before lower(), a keyword the rules match is in the lowered
text."""
_CASE_FOLDED = re.compile("[" + "".join(map(chr, CASE_FOLDS)) + "]")
_AT_WORD = re.compile(r"[\s(\[{<][ \t]*(?:at|arroba)[\s)\]}>]", re.IGNORECASE)
_BRACKETED_AT = re.compile(r"[(\[{<][ \t]*(?:at|arroba)[ \t]*[)\]}>]", re.IGNORECASE)
_AT_WEBMAIL = re.compile(rf"\s(?:at|arroba)\s+{WEBMAIL}", re.IGNORECASE)
_IPV4_DIGITS = re.compile(r"\d\.\d{1,3}\.\d{1,3}\.\d")
_IPV6_COLON = re.compile(r"[0-9a-f]:[0-9a-f]", re.IGNORECASE)
_IPV6_ELIDED = re.compile(r"::[0-9a-f]", re.IGNORECASE)
"""Not "::=" as grammars write it."""
_WEBMAILS = tuple(WEBMAIL.removeprefix("(?:").removesuffix(")").split("|"))
_ASSIGNED_KEYWORD = re.compile(
    r"(?:pass|word|wd|phrase|code|secret|token|key|credentials?|contrase[ñn]a)[\"']?\s*[:=]"
)
"""How every keyword of the credential rule ends, then its ":" or "=", over lowered text."""
_ID_DIGITS = re.compile(
    r"\d(?:\d{6}|[ .\-_]\d{3}[ .\-_]\d|\d\d[ \t]?[\-._/·][ \t]?\d\d[ \t]?[\-._/·])"
)
"""Seven digits in a row, or the digits of "12.345.678", "12 345 678" or "536-90-4399" (any
punctuation between an SSN's groups): what each national id holds."""
_DIGIT_BLANK = re.compile(r"\d[A-Za-z]?\s", re.IGNORECASE)
_KEY_PREFIXES = (
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "pk_live_",
    "whsec_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "gldt-",
    "glrt-",
    "xox",
    "xapp-",
    "AKIA",
    "ASIA",
    "AIza",
    "ya29.",
    "GOCSPX-",
    "hf_",
    "api_org_",
    "npm_",
    "pypi-",
    "SG.",
    "glsa_",
    "sntry",
    "hvs.",
    "hvb.",
    "shpat_",
    "shpss_",
    "_v1_",
    "ATATT",
    "AGE-SECRET-KEY",
    "xai-",
    "gsk_",
    "pplx-",
    "r8_",
    "dapi",
    "eyJ",
    "SK",
    "AC",
    "Q~",
    "hooks.slack.com/services/",
)
"""A literal every alternative of the key rule holds (case-sensitive, as the rule is)."""


class ScreenedText:
    """A normalized text and the cheap facts about it the screens read."""

    __slots__ = ("_lowered", "digits", "text")

    def __init__(self, text: str):
        self.text = text
        self.digits = len(_DIGIT.findall(text))
        self._lowered: str | None = None

    @property
    def lowered(self) -> str:
        if self._lowered is None:
            text = self.text
            if not text.isascii() and _CASE_FOLDED.search(text):
                text = text.translate(CASE_FOLDS)  # a lookup per character: only where one is there
            self._lowered = text.lower()
        return self._lowered

    def has(self, *keywords: str) -> bool:
        """Whether `text` holds one of `keywords` (lower case) as re.IGNORECASE matches them."""
        lowered = self.lowered
        for keyword in keywords:  # a loop, not any(): the screens run on every field of every row
            if keyword in lowered:
                return True
        return False

    def holds(self, literals: tuple[str, ...]) -> bool:
        """Whether `text` holds one of `literals` as they are written."""
        for literal in literals:
            if literal in self.text:
                return True
        return False

    def matches(self, pattern: re.Pattern[str]) -> bool:
        """Whether the lowered text holds `pattern` (lower case, no flags): re.IGNORECASE over the
        text."""
        return pattern.search(self.lowered) is not None


_ES_TYPE_SCREEN = ES_STREET_TYPES
_ES_CAPITALISED_SCREEN = ES_CAPITALISED_TYPES
SCREENS: dict[str, Callable[[ScreenedText], bool]] = {
    # "@", "%40", "&#64;", "&commat;"; else " at " with "(at)", a spelled-out dot or a webmail after
    # it.
    "at_sign_like": lambda t: (
        "@" in t.text
        or "%40" in t.text
        or "&" in t.text
        or bool(
            (
                t.has("dot", "punto")
                or _BRACKETED_AT.search(t.text)
                or (t.has(*_WEBMAILS) and _AT_WEBMAIL.search(t.text))
            )
            and _AT_WORD.search(t.text)
        )
    ),
    "key_like_prefix": lambda t: t.holds(_KEY_PREFIXES),
    "pem_marker": lambda t: "-----" in t.text or "PuTTY" in t.text or "Private-Lines:" in t.text,
    "credential_assignment": lambda t: (
        ("=" in t.text or ":" in t.text) and t.matches(_ASSIGNED_KEYWORD)
    ),
    "password_sentence": lambda t: t.has("pass", "contrase", "mi clave", "my pin", "mi pin"),
    "password_next": lambda t: t.has("pass", "contrase"),
    "auth_header": lambda t: "earer" in t.text or "asic" in t.text or t.has("authori"),
    "cookie_like": lambda t: (
        "=" in t.text
        and t.has("cookie", "sid=", "sessionid=", "session=", "csrftoken=", "xsrf-token=")
    ),
    "url_credentials": lambda t: "://" in t.text,
    "url_secret_param": lambda t: "=" in t.text,
    "ip_address_like": lambda t: (
        (t.digits >= 4 and bool(_IPV4_DIGITS.search(t.text)))
        or ("::" in t.text and bool(_IPV6_ELIDED.search(t.text)))
        or (t.text.count(":") >= 7 and bool(_IPV6_COLON.search(t.text)))
    ),
    "national_id_like": lambda t: t.digits >= 7 and bool(_ID_DIGITS.search(t.text)),
    "address_like": lambda t: (
        (t.digits >= 1 or "s/n" in t.lowered)
        and (  # a number, or "sin número"
            bool(_DIGIT_BLANK.search(t.text))
            or t.has(*_ES_TYPE_SCREEN)
            or t.holds(_ES_CAPITALISED_SCREEN)
            or "PO A" in t.text
        )
    ),
    "name_after_cue": lambda t: (
        t.has("me llamo", "mi nombre es", "my name is", "a nombre de", "firmado por")
        or ("\n" in t.text and t.has("saludo", "atentamente", "cordialmente", "regards"))
    ),
}
"""Per rule, a necessary condition of a match (see above)."""
