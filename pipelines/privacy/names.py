"""Person names in Spanish and English text, without a model: a gazetteer plus context cues.

A capitalised first name on its own is not a name ("Rosa", "Will", "May" are words too); it
becomes one after a cue ("me llamo", "Dr.", "Atentamente,") or when a known surname follows.
"""

from __future__ import annotations

import functools
import importlib
import re
import unicodedata
from typing import NamedTuple

_FAKER_LOCALES = ("es_ES", "es_MX", "en_US", "en_GB")

TECHNICAL_WORDS = frozenset(
    """python django airflow flask fastapi pandas numpy scipy polars pyarrow arrow parquet docker
    kubernetes helm linux ubuntu debian windows macos java javascript typescript kotlin scala rust
    golang perl kafka spark hadoop redis postgres postgresql mysql sqlite oracle celery qdrant ragas
    vllm llama qwen openai pytorch torch tensorflow jupyter git github gitlab bash unicode ascii utf
    json yaml none true false asyncio dask trino presto grafana prometheus airbyte dagster prefect
    streamlit gradio slack jira confluence nginx apache terraform ansible mongo mongodb elastic
    kibana azure aws amazon google chrome firefox safari lambda""".split()  # noqa: SIM905 - reads as prose
)
"""Capitalised words that are tools in engineers' questions; never part of a name."""
_FUNCTION_WORDS = frozenset(
    """the this that these those if in a an for when it its see note as at by on or and but not no to
    of is are be with from all each any some also however then there here what which how why where
    el la los las un una en si para por con de del que qué cómo como cuando pero y o es son se lo al
    según también hay este esta estos estas ese esa mi tu su""".split()  # noqa: SIM905
)
_NEVER_NAMES = TECHNICAL_WORDS | _FUNCTION_WORDS
"""Sentence openers and tools: a strong cue before them is a coincidence, not a name."""

_UP = "A-ZÁÉÍÓÚÑÜÀÈÌÒÙÇÂÊÎÔÛËÏÖ"
_REST = rf"\w*(?:['’][{_UP}]\w*)?(?:-[{_UP}]\w*)?"
# The word-boundary check comes after the first letter: a pattern that opens with a character
# class lets the regex engine skip to candidates at C speed instead of testing every position.
_CAP = rf"[{_UP}](?<![\w'’\-][{_UP}]){_REST}"
_PARTICLE = r"(?:de(?:l|[ \t]+la|[ \t]+las|[ \t]+los)?|y|van(?:[ \t]+der|[ \t]+den)?|von|da|das|dos|di|du)"
_RUN = re.compile(rf"(?P<first>{_CAP})(?:[ \t]+(?:{_PARTICLE}[ \t]+)?[{_UP}]{_REST})*")
_TOKEN = re.compile(_CAP)

TITLES = (
    "Sr", "Sra", "Srta", "Dr", "Dra", "Dña", "Don", "Doña", "don", "doña", "Prof", "Profa",
    "Mr", "Mrs", "Ms", "Mx", "Miss",
)  # fmt: skip
STRONG_PHRASES = ("me llamo", "mi nombre es", "my name is", "firmado")
"""Strong cues: whatever capitalised words follow are a name, known or not."""
_WEAK_PHRASES = (
    r"soy|I['’]m|I\s+am|contact(?:a|ar|e)?(?:\s+(?:con|with|to))?|habla(?:r)?\s+con|escribe\s+a"
    r"|atentamente|saludos|un\s+saludo|cordialmente|regards|best\s+regards|kind\s+regards|thanks"
    r"|thank\s+you|gracias|cheers|hola|hi|hello|hey|dear|estimad[oa]|querid[oa]|de\s+parte\s+de"
    r"|on\s+behalf\s+of|cliente|customer|signed"
)
"""Weak cues: only a known first name or surname follows as a name ("Gracias, Rosa")."""
_STRONG = "|".join(r"\s+".join(phrase.split()) for phrase in STRONG_PHRASES)
_CUE_BEFORE = re.compile(
    rf"(?:(?P<strong>\b(?i:{_STRONG})|\b(?:{'|'.join(TITLES)})\.?)|\b(?i:{_WEAK_PHRASES}))[ \t]*[,:]?\s*\Z"
)
"""A cue that ends right where a capitalised run starts; searched in a short window before it."""
_CUE_WINDOW = 32
_CUE_GAP = " \t\r\n,:"
_TITLE_ENDINGS = TITLES + tuple(f"{title}." for title in TITLES)
_MAX_TOKENS = 5


class _Token(NamedTuple):
    start: int
    end: int
    key: str
    after_particle: bool


def fold(text: str) -> str:
    """Accent- and case-insensitive form, so "Pérez", "PEREZ" and "perez" meet."""
    decomposed = unicodedata.normalize("NFKD", text.replace("’", "'"))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


class _Gazetteer(NamedTuple):
    first: frozenset[str]
    last: frozenset[str]
    known: frozenset[str]


@functools.cache
def _gazetteer() -> _Gazetteer:
    """First names and surnames from Faker's locale data, loaded once on first use."""
    first: set[str] = set()
    last: set[str] = set()
    for locale in _FAKER_LOCALES:
        provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
        for target, groups in ((first, ("first_names_male", "first_names_female")), (last, ("last_names",))):
            for group in groups:
                for entry in getattr(provider, group, ()):
                    target.update(w for w in fold(entry).split() if len(w) > 1)
    particles = {"de", "del", "la", "las", "los", "y", "van", "der", "den", "von", "da", "das", "dos", "di", "du"}
    first -= particles | _NEVER_NAMES
    last -= particles | _NEVER_NAMES
    return _Gazetteer(frozenset(first), frozenset(last), frozenset(first | last))


@functools.lru_cache(maxsize=1 << 16)
def _key(word: str) -> str:
    return fold(word)


def _known(key: str, names: frozenset[str]) -> bool:
    return key in names or ("-" in key and all(part in names for part in key.split("-")))


def _tokens(text: str, start: int, end: int) -> list[_Token]:
    tokens, previous_end = [], start
    for m in _TOKEN.finditer(text, start, end):
        tokens.append(_Token(m.start(), m.end(), _key(m.group()), bool(text[previous_end : m.start()].strip())))
        previous_end = m.end()
    return tokens


def _after_cue(tokens: list[_Token], strong: bool) -> int:
    """How many leading tokens after a cue form the name (0: none)."""
    known = _gazetteer().known
    if not tokens or tokens[0].key in _NEVER_NAMES:
        return 0
    if not strong and not _known(tokens[0].key, known):
        return 0
    count = 1
    for token in tokens[1:_MAX_TOKENS]:
        if token.key in _NEVER_NAMES or not (strong or _known(token.key, known)):
            break
        count += 1
    return count


def _first_last_sequences(tokens: list[_Token]) -> list[tuple[int, int]]:
    """Windows "FirstName [FirstName] Surname [particle] [Surname]" as token index ranges."""
    first, last, _ = _gazetteer()
    windows, i = [], 0
    while i < len(tokens):
        if tokens[i].key not in first or tokens[i].after_particle:
            i += 1
            continue
        end, j = None, i + 1
        while j < len(tokens) and j - i < _MAX_TOKENS:
            token = tokens[j]
            if _known(token.key, last):
                end = j + 1
            elif not _known(token.key, first):
                break
            j += 1
        if end is None:
            i += 1
        else:
            windows.append((i, end))
            i = end
    return windows


def _cue_possible(text: str, start: int, key: str, known: frozenset[str]) -> bool:
    """A cheap test before the cue regex: weak cues need a known name, strong ones end in a title or phrase."""
    if not start or text[start - 1] not in _CUE_GAP:  # '"True"', '(None': no cue fits
        return False
    if key in known:
        return True
    if key in _NEVER_NAMES:
        return False
    tail = text[max(0, start - 16) : start].rstrip(_CUE_GAP)
    return tail.endswith(_TITLE_ENDINGS) or tail.lower().endswith(STRONG_PHRASES)


def find_names(text: str) -> list[tuple[int, int, str]]:
    """Candidate person names as (start, end, canonical); may overlap, the caller resolves."""
    known = _gazetteer().known
    found = []
    for m in _RUN.finditer(text):
        start, end = m.span()
        if m.end(1) == end:  # one word: a name only right after a cue
            if not start or text[start - 1] not in _CUE_GAP:  # spares the key lookup for most words
                continue
            key = _key(m.group())
            if not _cue_possible(text, start, key, known):
                continue
            tokens = [_Token(start, end, key, False)]
        else:
            tokens = _tokens(text, start, end)
            found.extend((tokens[a].start, tokens[b - 1].end) for a, b in _first_last_sequences(tokens))
        # A cue sits before the run ("soy Rosa") or opens it ("Soy Rosa", "Mr Smith").
        for i, token in enumerate(tokens[:2]):
            if _cue_possible(text, token.start, token.key, known):
                cue = _CUE_BEFORE.search(text, max(0, token.start - _CUE_WINDOW), token.start)
                count = cue and _after_cue(tokens[i:], strong=cue.group("strong") is not None)
                if count:
                    found.append((token.start, tokens[i + count - 1].end))
                    break
    return [(start, end, " ".join(fold(text[start:end]).split())) for start, end in found]
