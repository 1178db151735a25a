"""The residual rules' screens skip a rule only where it cannot match: the fast path flags what the
slow one does.

A screen that failed text its rule flags would let a value through the last line of defence, so the
rules are run here without their screens, over text built to sit on the screens' edges: the rules'
keywords and shapes, in any case, with the characters re.IGNORECASE matches to ASCII letters.
"""

import re
import string

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.privacy.residual import residual_pii_reasons
from pipelines.privacy.residual.digit_runs import long_digit_run
from pipelines.privacy.residual.iban_like import iban_like
from pipelines.privacy.residual.normalize import normalized
from pipelines.privacy.residual.rules import RULES
from pipelines.privacy.residual.screens import CASE_FOLDS, SCREENS

FRAGMENTS = [
    # keywords and the shapes after them
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "pwd",
    "secret",
    "token",
    "api_key",
    "api-key",
    "apikey",
    "access_key",
    "private-key",
    "accountkey",
    "client_secret",
    "credentials",
    "contraseña",
    "contrasena",
    "my pass",
    "mi clave",
    "my pin",
    "mi pin",
    " is ",
    " es ",
    " was ",
    "Sunshine2007*",
    "hunter2",
    "Qwerty2000#",
    "Bearer",
    "bearer",
    "Basic",
    "Authorization",
    "authorisation",
    "dXNlcjpwYXNz",
    "abcdefghijklmnop1234567890",
    "cookie",
    "Set-Cookie",
    "sessionid",
    "sessid",
    "session",
    "sid",
    "csrftoken",
    "xsrf-token",
    "PHPSESSID",
    "://",
    "admin",
    "S3cr3t",
    "?access_token",
    "&sig",
    "#code",
    ";auth",
    "sk-",
    "sk_live_",
    "ghp_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "AKIA",
    "AIza",
    "ya29.",
    "hf_",
    "eyJ",
    "SK",
    "AC",
    "Q~",
    "hooks.slack.com/services/",
    "do_v1_",
    "shpat_",
    "hvs.",
    "r8_",
    "dapi",
    "0123456789abcdef0123456789abcdef",
    "-----BEGIN RSA PRIVATE KEY",
    "PuTTY-User-Key-File",
    "Private-Lines:",
    "juan",
    "@",
    "＠",
    "%40",
    "&#064;",
    "&commat;",
    "(at)",
    "[arroba]",
    " at ",
    " arroba ",
    "gmail",
    "hotmail",
    "live",
    "dot",
    "punto",
    "(dot)",
    ".",
    " .com",
    "com",
    "83.45.112.9",
    "2001:db8::8a2e:370:7334",
    "2a02:9130::8a2e:370:7334",
    "::1",
    "::=",
    "fe80:0:0:0:0:0:0:1",
    "1:2:3:4:5:6:7:8",
    "12345678Z",
    "12.345.678-Z",
    "X-1234567-L",
    "B1234567J",
    "536-90-4399",
    "28/12345678/40",
    "ES91 2100 0418 4502 0005 1332",
    "GB82WEST12345698765432",
    "es91 2100 0418",
    "Calle Mayor",
    "c/ Sol",
    "Avda. de la Paz",
    "Gran Vía",
    "Travesía",
    "221",
    "221B",
    "Baker Street",
    "St",
    "Rd",
    "me llamo",
    "mi nombre es",
    "my name is",
    "a nombre de",
    "firmado por",
    "Saludos",
    "regards",
    "Xiomara",
    "612 345 678",
    "+33 6 12 34 56 78",
    "4111111111111111",
    "(555) 123-4567",
    "29/11/2026",
    "2026-11-29",
    # shapes once missed: punctuated phones after a cue, trunks, numbered and capitalised streets,
    # postcode lines
    "612_345_678",
    "612,345,678",
    "612·345·678",
    "llámame al",
    "Tel.",
    "call",
    "+44 (0)20",
    "0034.612.345.678",
    "Cuesta de",
    "Privada",
    "Diag.",
    "C.",
    "N°",
    "#",
    "Av. 6",
    "Bis",
    "FPO AE 09051",
    "Flat 9",
    "NSW, 2000",
    "NY 10118",
    "K7C 1Y2",
    "LS41 1PL",
    "Apt. 12",
    "Bend",
    "Skyway",
    "192.0.2.1",
    "10.20.0.0/16",
    "a[::2]",
    "ISBN 0-13-951294-2",
    "project",
    "ssn",
    "hf_raise_for_status",
    "your-api-key",
    "unk_token)",
    "nombre:contraseña:",
    "my name is method",
    "DA39 A3EE 5E6B",
    "BA54",
    "fd4618de-ad91-0f51",
    "0.0197076236097",
    "[PHONE_1a2b3c4d]",
    "\\u0040",
    "\\n",
    "\u200b",
    "\u2013",
    "ｐａｓｓｗｏｒｄ",
    "１２３４５６７８９",
    "٣٤٥٦٧٨٩٠١٢",  # Arabic-Indic digits: \d matches them
    "İ",
    "ı",
    "ſ",
    "K",
]
SEPARATORS = [
    "",
    " ",
    "  ",
    "\n",
    "\t",
    "=",
    ":",
    ": ",
    "= ",
    '"',
    "'",
    ",",
    ", ",
    "-",
    ".",
    "/",
    "(",
    ")",
    "1",
    "9",
]

LOOK_ALIKES = str.maketrans({"i": "ı", "I": "İ", "s": "ſ", "k": "K"})


@st.composite
def edge_texts(draw) -> str:
    parts = draw(
        st.lists(
            st.tuples(st.sampled_from(FRAGMENTS), st.sampled_from(SEPARATORS)),
            min_size=1,
            max_size=8,
        )
    )
    text = "".join(fragment + separator for fragment, separator in parts)
    case = draw(
        st.sampled_from([str, str.upper, str.lower, str.title, lambda t: t.translate(LOOK_ALIKES)])
    )
    return case(text)


def unscreened_reasons(text: str) -> list[str]:
    """The rules as they were before the screens: every rule over every text."""
    if not text:
        return []
    text = normalized(text)
    reasons = ["long_digit_run"] if long_digit_run(text) else []
    reasons += [name for name, rule in RULES.items() if rule.search(text)]
    return reasons + (["iban_like"] if iban_like(text) else [])


@settings(max_examples=3000)
@given(st.one_of(edge_texts(), st.text(max_size=200)))
def test_screens_never_hide_a_match(text):
    assert residual_pii_reasons(text) == unscreened_reasons(text)


def test_every_fragment_and_its_look_alikes_agree():
    for fragment in FRAGMENTS:
        for text in (
            fragment,
            fragment.upper(),
            fragment.translate(LOOK_ALIKES),
            f"x {fragment}=Abc123456789!",
        ):
            assert residual_pii_reasons(text) == unscreened_reasons(text), text


def test_every_rule_has_a_screen():
    assert SCREENS.keys() == RULES.keys()


def test_the_case_folds_are_all_that_ignorecase_adds_to_ascii_letters():
    """The keyword screens lower the text after folding these: a character Python's re matched to an
    ASCII letter without lower() making it one would hide a keyword from its screen."""
    everything = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    for letter in string.ascii_lowercase:
        matched = {m.group() for m in re.finditer(letter, everything, re.IGNORECASE)}
        assert {c for c in matched if c.translate(CASE_FOLDS).lower() != letter} == set(), letter
