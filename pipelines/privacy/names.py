"""Person names in Spanish and English text, without a model: a gazetteer plus context cues.

A capitalised first name on its own is not a name ("Rosa", "Will", "May" are words too); it
becomes one after a cue ("me llamo", "Dr.", "Atentamente,") or when a surname follows. How much a
cue vouches for depends on the cue:
- strong ("me llamo", "my name is", "a nombre de", "Dr.", a closing such as "Saludos," followed by a
  line break, i.e. a signature): whatever name-like words follow, known or not, capitalised or not;
- middle ("soy", "I'm", "for", "para", "contacta con"): a known name, or capitalised words that are
  not everyday words, tools or nationalities ("for Xiomara Quintero", not "for Python" or "I'm
  Spanish");
- weak ("hola", "gracias", "thanks"): only a known first name or surname ("Gracias, Rosa"). Once a
  name has started, the capitalised words that follow belong to it ("Marta Vilaró i Puig", "Juan de
  la Fuente", "Lorca García-Lorca"), as do lower-case known names after a cue ("soy juan garcía").
"""

from __future__ import annotations

import functools
import importlib
import re
import unicodedata
from typing import NamedTuple

_FAKER_LOCALES = ("es_ES", "es_CA", "es_MX", "es_AR", "es_CO", "es_CL", "en_US", "en_GB")
_COMMON_WORD_LOCALES = ("en_US", "es_ES")

TECHNICAL_WORDS = frozenset(
    """python django airflow flask fastapi pandas numpy scipy polars pyarrow arrow parquet docker
    kubernetes helm linux ubuntu debian windows macos java javascript typescript kotlin scala rust
    golang perl kafka spark hadoop redis postgres postgresql mysql sqlite oracle celery qdrant ragas
    vllm llama qwen openai pytorch torch tensorflow jupyter git github gitlab bash unicode ascii utf
    json yaml none true false asyncio dask trino presto grafana prometheus airbyte dagster prefect
    streamlit gradio slack jira confluence nginx apache terraform ansible mongo mongodb elastic
    kibana azure aws amazon google chrome firefox safari lambda cloud engine service services server servers
    data database center centre cable access build compute storage network platform console manager hub studio
    registry cluster bucket function functions workload workloads instance instances gateway router proxy connector
    driver module package library toolkit framework plugin runtime kernel shell terminal browser desktop
    config sync state machine autoconf automake bitbucket comcast blueprint""".split()  # noqa: SIM905 - reads as prose
)
"""Capitalised words that are tools or products in engineers' questions ("for Bitbucket Cloud", "for
Compute Engine"); never part of a name."""
_FUNCTION_WORDS = frozenset(
    """the this that these those if in a an for when it its see note as at by on or and but not no to
    of is are be with from all each any some also however then there here what which how why where
    el la los las un una en si para por con de del que qué cómo como cuando pero y o es son se lo al
    según también hay este esta estos estas ese esa mi tu su i""".split()  # noqa: SIM905
)
_CALENDAR_AND_PEOPLES = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday january february march april june july
    august september october november december lunes martes miércoles jueves viernes sábado domingo
    enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre
    spanish english french german italian portuguese catalan basque galician american british mexican
    argentinian chinese japanese european español inglés francés alemán""".split()  # noqa: SIM905
)
_NEVER_NAMES = TECHNICAL_WORDS | _FUNCTION_WORDS | {"\x00"}
"""Sentence openers and tools: a strong cue before them is a coincidence, not a name."""


def _latin_letters(predicate) -> str:
    """Latin letters up to Latin Extended-B, for a regex class: "Ł", "Ø", "Ș" open names too."""
    return "".join(sorted(chr(c) for c in range(0x41, 0x250) if predicate(chr(c))))


UPPERCASE_LETTERS = _latin_letters(str.isupper)
LOWERCASE_LETTERS = _latin_letters(str.islower)
_UP = UPPERCASE_LETTERS
_LOW = LOWERCASE_LETTERS + "ª"
_REST = rf"\w*(?:['’][{_UP}]\w*)?(?:-[{_UP}]\w*)?"
# The word-boundary check comes after the first letter: a pattern that opens with a character
# class lets the regex engine skip to candidates at C speed instead of testing every position.
_CAP = rf"[{_UP}](?<![\w'’\-][{_UP}]){_REST}"
_PARTICLE = (
    r"(?:de(?:l|[ \t]+la|[ \t]+las|[ \t]+los|[ \t]+l['’])?|dels|della|des|y|i|e|van(?:[ \t]+der|[ \t]+den|[ \t]+de)?|von|ter"
    r"|da|das|dos|di|du|le)"
)
_RUN = re.compile(
    rf"(?P<first>{_CAP})(?:[ \t]+(?:{_PARTICLE}[ \t]+)?(?:[dDlL]['’])?[{_UP}]{_REST})*"
)
_TOKEN = re.compile(rf"(?:[dDlL]['’])?[{_UP}]{_REST}")
_PARTICLE_WORDS = frozenset(
    "de del la las los dels della des y i e van von ter da das dos di du le der den".split()
)

TITLES = (
    "Sr",
    "Sra",
    "Srta",
    "Dr",
    "Dra",
    "Dña",
    "Don",
    "Doña",
    "don",
    "doña",
    "Prof",
    "Profa",
    "Mr",
    "Mrs",
    "Ms",
    "Mx",
    "Miss",
)
STRONG_PHRASES = ("me llamo", "mi nombre es", "my name is", "a nombre de", "firmado", "signed by")
"""Strong cues: whatever name-like words follow are a name, known or not."""
_MIDDLE_PHRASES = (
    r"soy|I['’]m|I\s+am|this\s+is|aquí|contact(?:a|ar|e)?(?:\s+(?:con|with|to))?|habla(?:r)?\s+con"
    r"|escribe\s+a|pregunta\s+por|ask\s+for|de\s+parte\s+de|on\s+behalf\s+of"
)
"""Middle cues: a known name, or a capitalised word that is no everyday word ("soy Xiomara")."""
_PAIR_PHRASES = r"for|para|cliente|customer|titular|holder|reserva|booking"
"""Middle cues too common to vouch for one unknown word ("for Loop"): two are needed ("for Xiomara
Quintero")."""
_CLOSINGS = (
    r"atentamente|saludos|un\s+saludo|cordialmente|regards|best\s+regards|kind\s+regards|best|thanks|thank\s+you"
    r"|gracias|cheers|signed|att|atte|--"
)
"""Closings: weak on the same line ("Gracias, Rosa"), strong before a line break (a signature)."""
_WEAK_PHRASES = (
    r"hola|hi|hello|hey|dear|estimad[oa]|querid[oa]|buenos\s+d[ií]as|buenas(?:\s+tardes)?"
)
_STRONG = "|".join(r"\s+".join(map(re.escape, phrase.split())) for phrase in STRONG_PHRASES)
_CUE_BEFORE = re.compile(
    rf"(?:(?P<strong>\b(?i:{_STRONG})|\b(?:{'|'.join(TITLES)})\.?)|(?P<middle>\b(?i:{_MIDDLE_PHRASES}))"
    rf"|(?P<pair>\b(?i:{_PAIR_PHRASES}))|(?P<closing>(?:\b|(?<=\s)|^)(?i:{_CLOSINGS}))|\b(?i:{_WEAK_PHRASES}))"
    rf"(?P<gap>[ \t]*[,:]?[ \t]*\n?\s*(?P<particle>{_PARTICLE}[ \t]+)?)\Z"
)
"""A cue that ends right where a name starts; searched in a short window before it."""
_CUE_WINDOW = 32
_MAX_TOKENS = 5

_TITLE_WORDS = tuple(dict.fromkeys(title.lower() for title in TITLES))
_STRONG_WORDS = tuple("llamo nombre name firmado signed".split())
_MIDDLE_WORDS = tuple(
    """soy i'm i’m am this aquí aqui contacta contactar contacte contact habla hablar
    escribe pregunta ask parte behalf""".split()
)
_PAIR_WORDS = tuple("for para cliente customer titular holder reserva booking".split())
_CLOSING_WORDS = tuple(
    """atentamente saludos saludo cordialmente regards best thanks thank gracias cheers
    att atte --""".split()
)
_WEAK_WORDS = tuple(
    "hola hi hello hey dear estimado estimada querido querida buenos buenas".split()
)
_CUE_WORDS = (
    _TITLE_WORDS + _STRONG_WORDS + _MIDDLE_WORDS + _PAIR_WORDS + _CLOSING_WORDS + _WEAK_WORDS
)
"""A word of every cue, lower-cased. The name detector works from their occurrences: testing every
capitalised word of a long text for a cue before it costs more than the rest of the detector."""
_CUE_WORD_FORMS = {
    head + word + tail: word
    for word in _CUE_WORDS
    for head in ("", "(", "¡", "¿", '"', "'")
    for tail in ("", ",", ":", "!", ".", ";")
}
"""The cue words as `str.split` leaves them, punctuation attached."""
_CUE_WORD_SET = frozenset(_CUE_WORD_FORMS)
_CONNECTORS = frozenset(
    "a con with to por for de of is es am you la el the días dias tardes".split()
)
"""Words between a cue's word and the name: "escribe a", "my name is", "de parte de", "thank
you"."""
_NEEDS_CONNECTOR = {
    "nombre": ("es", "de"),
    "name": ("is",),
    "this": ("is",),
    "behalf": ("of",),
    "parte": ("de",),
    "escribe": ("a",),
    "pregunta": ("por",),
    "ask": ("for",),
    "thank": ("you",),
    "habla": ("con",),
    "hablar": ("con",),
    "buenos": ("días", "dias"),
}
"""Cue words that are a cue only with the word after them ("my name is", not "the name of")."""
_VOUCHING_WORDS = frozenset(_STRONG_WORDS + _TITLE_WORDS + _CLOSING_WORDS)
"""Cue words that can vouch for a word no list knows (a strong cue, a title, a signature's
closing)."""
_CAPITALS_ONLY = frozenset(
    "for para cliente customer titular holder reserva booking this ask pregunta escribe".split()
)
"""Cue words too common in prose to look for a lower-case name after them."""
_GAP = re.compile(r"\.?[ \t]*[,:]?[ \t]*\n?\s*")
_NEXT_WORD = re.compile(r"[^\W\d_]+['’]?[ \t]+")
_LOWER_WORD = re.compile(rf"[{_LOW}]+(?:-[{_LOW}]+)?")
_LOWER_PARTICLES = frozenset("de del la las los y i e da das dos di du van von der den".split())


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
    common: frozenset[str]
    """Everyday words that are no names: a capitalised one is a heading or a sentence opener."""
    everyday: frozenset[str]
    """Everyday words, names among them ("will", "may", "rosa"): in lower case they are words."""


@functools.cache
def _gazetteer() -> _Gazetteer:
    """First names and surnames from Faker's locale data, loaded once on first use."""
    first: set[str] = set()
    last: set[str] = set()
    for locale in _FAKER_LOCALES:
        provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
        for target, groups in (
            (first, ("first_names_male", "first_names_female", "first_names")),
            (last, ("last_names",)),
        ):
            for group in groups:
                entries = getattr(provider, group, ())
                if isinstance(entries, (list, tuple, dict)):  # some locales compute it: skip those
                    for entry in entries:
                        target.update(w for w in fold(entry).split() if len(w) > 1)
    particles = {
        "de",
        "del",
        "la",
        "las",
        "los",
        "y",
        "van",
        "der",
        "den",
        "von",
        "da",
        "das",
        "dos",
        "di",
        "du",
    }
    excluded = (
        particles | _NEVER_NAMES
    )  # not months and peoples: Julio, Abril, Germán and June are names
    first -= excluded
    last -= excluded
    common = set(_CALENDAR_AND_PEOPLES | _NEVER_NAMES)
    for locale in _COMMON_WORD_LOCALES:
        common.update(
            fold(w)
            for w in importlib.import_module(f"faker.providers.lorem.{locale}").Provider.word_list
        )
    known = frozenset(first | last)
    # English everyday words only: Faker's Spanish word list holds names ("juan", "maría") as words.
    english = {
        fold(w) for w in importlib.import_module("faker.providers.lorem.en_US").Provider.word_list
    }
    return _Gazetteer(
        frozenset(first), frozenset(last), known, frozenset(common - known), frozenset(english)
    )


_REMEMBERED_WORDS = 1 << 16
"""Distinct words each per-word function below keeps: the words of a day's traces repeat."""


@functools.lru_cache(maxsize=_REMEMBERED_WORDS)
def _key(word: str) -> str:
    return fold(word)


def _known(key: str, names: frozenset[str]) -> bool:
    return key in names or ("-" in key and all(part in names for part in key.split("-")))


_WORD_ENDINGS = (
    "tion",
    "tions",
    "sion",
    "sions",
    "ment",
    "ments",
    "ness",
    "ity",
    "ities",
    "ing",
    "ings",
    "able",
    "ible",
    "ism",
    "isms",
    "ics",
    "ances",
    "ences",
    "ship",
    "ful",
    "less",
    "ize",
    "ized",
    "ation",
    "cion",
    "ciones",
    "siones",
    "mente",
    "idad",
    "idades",
    "miento",
    "mientos",
    "ismo",
)
"""How English and Spanish common nouns and adjectives end and names rarely do ("Variable
Annotations"). Not "-ise", "-ence", "-ive": Françoise, Florence and Clive end that way."""


@functools.lru_cache(maxsize=_REMEMBERED_WORDS)
def _name_like(key: str) -> bool:
    """An unknown capitalised word that may be a name: not a tool, a function word or an everyday
    word."""
    bare = key.split("'")[-1]
    return (
        len(bare) > 1
        and bare not in _gazetteer().common
        and bare not in _NEVER_NAMES
        and not bare.endswith(_WORD_ENDINGS)
        and not any(c.isdigit() for c in bare)
    )


_ACRONYM = re.compile(r"[A-Z]{2,3}s?|[A-Z]+(?:-[A-Z]+)+")
"""Capitals of three letters or fewer, or joined by hyphens: "AI", "VPC", "TPUs", "MS-DOS", "SARA
AA" of a character table. Such a word is a name only if it is a known one ("ANA")."""
_NOT_A_NAME = "\x00"
"""The key of a token that can be no part of a name (see `_NEVER_NAMES`)."""


def _tokens(text: str, start: int, end: int) -> list[_Token]:
    tokens, previous_end = [], start
    known = _gazetteer().known
    for m in _TOKEN.finditer(text, start, end):
        key = _key(m.group())
        if _ACRONYM.fullmatch(m.group()) and key not in known:
            key = _NOT_A_NAME
        tokens.append(_Token(m.start(), m.end(), key, bool(text[previous_end : m.start()].strip())))
        previous_end = m.end()
    return tokens


def _continuation(tokens: list[_Token], everyday_words: bool = False) -> int:
    """How many tokens after the first still belong to a name that has started.

    `everyday_words`: after a cue that vouches for a name, a capitalised everyday word is a surname
    ("soy Sara Casa Grande"); after "Hola" it may be the next sentence.
    """
    known = _gazetteer().known
    count = 1
    for i, token in enumerate(tokens[1:_MAX_TOKENS], start=1):
        if token.key in _PARTICLE_WORDS and i + 1 < len(tokens):
            # "Susanne De Oliveira": a capitalised particle belongs to the name if a name follows
            continue
        if token.key in _NEVER_NAMES:
            break
        if not (everyday_words or _known(token.key, known) or _name_like(token.key)):
            break
        count = i + 1
    return count


def _after_cue(tokens: list[_Token], strength: str) -> int:
    """How many leading tokens after a cue form the name (0: none)."""
    known = _gazetteer().known
    if not tokens or tokens[0].key in _NEVER_NAMES:
        return 0
    first_known = _known(tokens[0].key, known)
    if strength != "strong" and tokens[0].key in _CALENDAR_AND_PEOPLES and len(tokens) == 1:
        return 0  # "I'm German", "thanks, May": a name only with a surname after it
    if (
        strength == "strong"
    ):  # "me llamo Abril Morata": after it even a month or a common word is a name
        return _continuation(tokens, everyday_words=True)
    if first_known:
        return _continuation(tokens, everyday_words=strength != "weak")
    if strength in ("middle", "pair") and _name_like(tokens[0].key):
        count = _continuation(tokens, everyday_words=True)
        return count if strength == "middle" or count >= 2 else 0
    return 0


def _first_last_sequences(tokens: list[_Token]) -> list[tuple[int, int]]:
    """Windows "FirstName [FirstName] Surname..." as token index ranges.

    A known first name followed by a known surname is a name; so is one followed by a capitalised
    word that is no everyday word ("Marta Vilaró"), because that is how unlisted surnames appear.
    """
    first, last, known, _, _ = _gazetteer()
    windows, i = [], 0
    while i < len(tokens):
        if tokens[i].key not in first or tokens[i].after_particle:
            i += 1
            continue
        end, j = None, i + 1
        while j < len(tokens) and j - i < _MAX_TOKENS:
            token = tokens[j]
            if token.key in _NEVER_NAMES:
                break
            # after a particle any capitalised word is a surname: "Victorino del Fuente"
            if (
                token.after_particle
                or _known(token.key, last)
                or (not _known(token.key, first) and _name_like(token.key))
            ):
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


def _strength(cue: re.Match[str]) -> str:
    if cue.group("strong") is not None:
        return "strong"
    if cue.group("middle") is not None:
        return "middle"
    if cue.group("pair") is not None:
        return "pair"
    if cue.group("closing") is not None and "\n" in cue.group("gap"):
        return "strong"  # a closing, then a line break: the next line is a signature
    return "weak"


_MULTI_RUN = re.compile(rf"{_CAP}(?:[ \t]+(?:{_PARTICLE}[ \t]+)?(?:[dDlL]['’])?[{_UP}]{_REST})+")
"""Two capitalised words or more: where a known first name and a surname can stand without a cue."""


def _unprompted_names(text: str) -> list[tuple[int, int]]:
    """Known first names followed by surnames, wherever they stand: "ping Juan de la Torre about
    it"."""
    found = []
    for run in _MULTI_RUN.finditer(text):
        tokens = _tokens(text, run.start(), run.end())
        found.extend((tokens[a].start, tokens[b - 1].end) for a, b in _first_last_sequences(tokens))
    return found


def _after_cue_words(text: str, lower: str, words: set[str]) -> dict[int, str]:
    """Where a name could start right after a cue, and the cue word that led there."""
    n = len(lower)
    positions: dict[int, str] = {}
    for word in {_CUE_WORD_FORMS[form] for form in _CUE_WORD_SET & words}:
        needs = _NEEDS_CONNECTOR.get(word)
        i = lower.find(word)
        while i != -1:
            j = i + len(word)
            if (i and lower[i - 1].isalnum()) or (j < n and lower[j].isalnum()):
                i = lower.find(word, j)
                continue
            if (
                word in _CAPITALS_ONLY
                and not needs
                and lower[j : j + 1] == " "
                and not text[j + 1 : j + 2].isupper()
            ):
                i = lower.find(
                    word, j
                )  # "for the", "para el": the common case, decided without a regex
                continue
            k = _GAP.match(lower, j).end()
            for step in range(3):
                if word in _CAPITALS_ONLY and not text[k : k + 1].isupper() and not needs:
                    break  # "for example", "this is": a name after these is capitalised
                connector = _NEXT_WORD.match(lower, k)
                following = connector.group().rstrip(" \t'’") if connector else ""
                if not (needs and step == 0):
                    positions.setdefault(k, word)
                elif following not in needs:
                    break
                if (
                    connector is None
                    or following not in _CONNECTORS
                    and following not in _PARTICLE_WORDS
                ):
                    break
                k = connector.end()
            i = lower.find(word, j)
    return {p: w for p, w in positions.items() if p < n}


def _cue_led_names(text: str, lower: str, words: set[str]) -> list[tuple[int, int]]:
    """Names right after a cue: capitalised as `_after_cue` allows, or typed in lower case."""
    found = []
    known = _gazetteer().known
    for start, word in sorted(_after_cue_words(text, lower, words).items()):
        vouching = word in _VOUCHING_WORDS
        if text[start].isupper():
            run = _RUN.match(text, start)
            if run is None:
                continue
            tokens = _tokens(text, start, run.end())
            if not tokens or tokens[0].key in _NEVER_NAMES:
                continue
            if not (vouching or _known(tokens[0].key, known) or _name_like(tokens[0].key)):
                # "for Example": only a strong cue, a title or a signature could vouch for it
                continue
            cue = _CUE_BEFORE.search(text, max(0, start - _CUE_WINDOW), start)
            count = cue and _after_cue(tokens, _strength(cue))
            if count:
                # "Sra. van Dijk": the particle between the cue and the name is the name's
                found.append(
                    (
                        cue.start("particle") if cue.group("particle") else start,
                        tokens[count - 1].end,
                    )
                )
        elif text[start].islower():
            found.extend(_lowercase_name(text, lower, start, vouching))
    return found


def _lowercase_name(text: str, lower: str, start: int, vouching: bool) -> list[tuple[int, int]]:
    """A name typed in lower case at `start`, after a cue: anything name-like after "me llamo", else
    known names that are not also everyday words ("thanks, will do")."""
    gazetteer = _gazetteer()
    first = _LOWER_WORD.match(lower, start)
    if first is None:
        return []
    key = _key(first.group())
    if not _known(key, gazetteer.known) and not (vouching and _name_like(key)):
        # "for the", "this is": no cue here can make these words a name; spare the cue regex
        return []
    cue = _CUE_BEFORE.search(lower, max(0, start - _CUE_WINDOW), start)
    if cue is None or cue.group("pair") is not None:
        return []
    strong = _strength(cue) == "strong" and cue.group("closing") is None
    words = []
    for word in _LOWER_WORD.finditer(lower, start, min(len(lower), start + 80)):
        gap = lower[words[-1][1] if words else start : word.start()]
        if gap.strip() or "\n" in gap or not text[word.start()].islower():
            break
        words.append((word.start(), word.end(), _key(word.group())))
        if len(words) > _MAX_TOKENS + 2:
            break
    taken = 0
    for i, (_, _, key) in enumerate(words):
        if (
            key in _LOWER_PARTICLES
            and i + 1 < len(words)
            and _known(words[i + 1][2], gazetteer.known)
            and taken
        ):
            continue
        if _known(key, gazetteer.known) and (strong or key not in gazetteer.everyday):
            taken = i + 1
        elif strong and i == 0 and _name_like(key):
            taken = 1
        else:
            break
    return [(words[0][0], words[taken - 1][1])] if taken else []


def find_names(
    text: str, lower: str | None = None, words: set[str] | None = None
) -> list[tuple[int, int, str]]:
    """Candidate person names as (start, end, canonical); may overlap, the caller resolves.

    `lower` is `text` lowercased with the same length and `words` is `set(lower.split())`, when the
    caller already has them.
    """
    lower = text.lower() if lower is None else lower
    found = _unprompted_names(text) + _cue_led_names(
        text, lower, set(lower.split()) if words is None else words
    )
    return [(start, end, " ".join(fold(text[start:end]).split())) for start, end in found]
