"""Short texts people wrote in each language, read from this machine at run time: the language
bench's items.

- gettext catalogs (`/usr/share/locale/<lang>/LC_MESSAGES/*.mo`): programs' messages as their
  translators wrote them ("Voleu continuar?", "Soll die neue Rolle Datenbanken erzeugen dürfen?"),
  English from the messages' own ids. Kept: one line, at most MAX_WORDS words and 160 characters, at
  least three words (eight letters in Japanese or Chinese, written without spaces), no format
  directives, markup, paths or URLs, and translated (not the English id again). The catalogs of
  names (iso-codes' languages and countries, keyboard layouts) are left out: "Cocama-Cocamilla" and
  "Iran, Islamic Republic of" are no one's sentence. Questions (ending in "?") come first, then
  sentences, each in the order of the sha256 of its text, so a rerun on the same machine reads the
  same items.
- GNOME Help page titles and Debian FAQ questions, where the checkout has the test fixtures cut from
  them (tests/data/SOURCES.md): questions and tasks as a manual's authors phrased them for users.

Nothing here is committed: a machine without a language's catalogs gives that language no items, and
the bench says so.
"""

from __future__ import annotations

import gettext
import gzip
import hashlib
import json
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

LOCALE = Path("/usr/share/locale")
FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "data"
CATALOG_DIRS = {
    "es": ("es",),
    "ca": ("ca",),
    "pt": ("pt", "pt_BR"),
    "fr": ("fr",),
    "de": ("de",),
    "it": ("it",),
    "nl": ("nl",),
    "ja": ("ja",),
    "ru": ("ru",),
}
"""Catalog folders per language; English comes from every catalog's message ids."""
FIXTURE_SOURCES = {"gnome-help": "gnome_help.json.gz", "debian-faq": "debian_faq.json.gz"}
MAX_WORDS = 20
_WORD = re.compile(r"[^\W\d_]{2,}")
_LETTER = re.compile(r"[^\W\d_]")
_NOT_PROSE = re.compile(r"[%{}<>_\\/|=@$&]|\.\.\.|--|\b\w+://")
_UNSPACED_SCRIPT = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
"""Kana and CJK ideographs: a sentence in them has no spaces to count words by."""
NAME_CATALOGS = ("iso_", "xkeyboard-config")


@dataclass(frozen=True)
class LanguageText:
    language: str
    source: str
    """`gettext-question`, `gettext-sentence`, `gnome-help` or `debian-faq`."""
    text: str


def short_text(text: str) -> bool:
    """A one-line question or sentence of ordinary words: not a label, a format string or a path."""
    text = text.strip()
    if (
        not text
        or "\n" in text
        or len(text) > 160
        or _NOT_PROSE.search(text)
        or not _LETTER.match(text.lstrip("¿¡«\"'("))
    ):
        return False
    if _UNSPACED_SCRIPT.search(text):
        return len(_LETTER.findall(text)) >= 8
    return 3 <= len(_WORD.findall(text)) <= MAX_WORDS


def is_question(text: str) -> bool:
    return text.rstrip().endswith(("?", "？"))


def catalog_messages(path: Path) -> Iterator[tuple[str, str]]:
    """(message id, translation) of one compiled catalog; nothing from an unreadable one."""
    try:
        with path.open("rb") as handle:
            catalog = gettext.GNUTranslations(
                handle
            )._catalog  # the parsed .mo: {id or (id, n): text}
    except (OSError, ValueError, struct.error):  # not a catalog, or not one in UTF-8
        return
    for key, translation in catalog.items():
        message_id = key[0] if isinstance(key, tuple) else key
        if isinstance(message_id, str) and message_id and isinstance(translation, str):
            # A message with a context is stored as "context\x04message".
            yield message_id.rsplit("\x04", 1)[-1].strip(), translation.strip()


def _ordered(texts: set[str], limit: int) -> list[str]:
    def key(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    questions = sorted((t for t in texts if is_question(t)), key=key)
    return (questions + sorted((t for t in texts if not is_question(t)), key=key))[:limit]


def catalog_texts(per_language: int, locale: Path = LOCALE) -> list[LanguageText]:
    """At most `per_language` short texts per language from the machine's gettext catalogs."""
    english: set[str] = set()
    out: list[LanguageText] = []
    for language, folders in CATALOG_DIRS.items():
        found: set[str] = set()
        for folder in folders:
            for path in sorted((locale / folder / "LC_MESSAGES").glob("*.mo")):
                if path.name.startswith(NAME_CATALOGS):
                    continue
                for message_id, translation in catalog_messages(path):
                    if translation == message_id:
                        continue
                    english.update([message_id] if short_text(message_id) else [])
                    found.update([translation] if short_text(translation) else [])
        out += _tagged(language, _ordered(found, per_language))
    return _tagged("en", _ordered(english, per_language)) + out


def _tagged(language: str, texts: list[str]) -> list[LanguageText]:
    kind = {True: "gettext-question", False: "gettext-sentence"}
    return [LanguageText(language, kind[is_question(t)], t) for t in texts]


def fixture_texts(folder: Path = FIXTURES) -> list[LanguageText]:
    """Every question of the GNOME Help and Debian FAQ fixtures the checkout holds."""
    out = []
    for source, name in FIXTURE_SOURCES.items():
        if (folder / name).exists():
            with gzip.open(folder / name, "rt", encoding="utf-8") as handle:
                out += [
                    LanguageText(e["language"], source, " ".join(e["question"].split()))
                    for e in json.load(handle)
                ]
    return out


def language_texts(
    per_language: int, locale: Path = LOCALE, fixtures: Path = FIXTURES
) -> list[LanguageText]:
    return catalog_texts(per_language, locale) + fixture_texts(fixtures)
