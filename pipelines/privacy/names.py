"""Person names in Spanish and English text, without a model: a gazetteer plus context cues.

A capitalised first name on its own is not a name ("Rosa", "Will", "May" are words too); it
becomes one after a cue ("me llamo", "Dr.", "Atentamente,") or when a surname follows. How much a
cue vouches for depends on the cue:
- strong ("me llamo", "my name is", "a nombre de", "Dr.", a closing such as "Saludos," followed by a
  line break, i.e. a signature): whatever name-like words follow, known or not, capitalised or not;
- middle ("soy", "I'm", "for", "para", "contacta con"): a known name, or capitalised words that are
  not everyday words, tools or nationalities ("for Xiomara Quintero", not "for Python" or "I'm Spanish");
- weak ("hola", "gracias", "thanks"): only a known first name or surname ("Gracias, Rosa").
Once a name has started, the capitalised words that follow belong to it ("Marta Vilaró i Puig",
"Juan de la Fuente", "Lorca García-Lorca"), as do lower-case known names after a cue ("soy juan garcía").
"""

from __future__ import annotations

import functools
import importlib
import re
import string
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
    kibana azure aws amazon google chrome firefox safari lambda""".split()  # noqa: SIM905 - reads as prose
)
"""Capitalised words that are tools in engineers' questions; never part of a name."""
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
_NEVER_NAMES = TECHNICAL_WORDS | _FUNCTION_WORDS
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
_RUN = re.compile(rf"(?P<first>{_CAP})(?:[ \t]+(?:{_PARTICLE}[ \t]+)?(?:[dDlL]['’])?[{_UP}]{_REST})*")
_TOKEN = re.compile(rf"(?:[dDlL]['’])?[{_UP}]{_REST}")
_PARTICLE_WORDS = frozenset("de del la las los dels della des y i e van von ter da das dos di du le der den".split())

TITLES = (
    "Sr", "Sra", "Srta", "Dr", "Dra", "Dña", "Don", "Doña", "don", "doña", "Prof", "Profa",
    "Mr", "Mrs", "Ms", "Mx", "Miss",
)  # fmt: skip
STRONG_PHRASES = ("me llamo", "mi nombre es", "my name is", "a nombre de", "firmado", "signed by")
"""Strong cues: whatever name-like words follow are a name, known or not."""
_MIDDLE_PHRASES = (
    r"soy|I['’]m|I\s+am|this\s+is|aquí|contact(?:a|ar|e)?(?:\s+(?:con|with|to))?|habla(?:r)?\s+con"
    r"|escribe\s+a|pregunta\s+por|ask\s+for|de\s+parte\s+de|on\s+behalf\s+of"
)
"""Middle cues: a known name, or a capitalised word that is no everyday word ("soy Xiomara")."""
_PAIR_PHRASES = r"for|para|cliente|customer|titular|holder|reserva|booking"
"""Middle cues too common to vouch for one unknown word ("for Loop"): two are needed ("for Xiomara Quintero")."""
_CLOSINGS = (
    r"atentamente|saludos|un\s+saludo|cordialmente|regards|best\s+regards|kind\s+regards|best|thanks|thank\s+you"
    r"|gracias|cheers|signed|att|atte|--"
)
"""Closings: weak on the same line ("Gracias, Rosa"), strong before a line break (a signature)."""
_WEAK_PHRASES = r"hola|hi|hello|hey|dear|estimad[oa]|querid[oa]|buenos\s+d[ií]as|buenas(?:\s+tardes)?"
_STRONG = "|".join(r"\s+".join(map(re.escape, phrase.split())) for phrase in STRONG_PHRASES)
_CUE_BEFORE = re.compile(
    rf"(?:(?P<strong>\b(?i:{_STRONG})|\b(?:{'|'.join(TITLES)})\.?)|(?P<middle>\b(?i:{_MIDDLE_PHRASES}))"
    rf"|(?P<pair>\b(?i:{_PAIR_PHRASES}))|(?P<closing>(?:\b|(?<=\s)|^)(?i:{_CLOSINGS}))|\b(?i:{_WEAK_PHRASES}))"
    rf"(?P<gap>[ \t]*[,:]?[ \t]*\n?\s*(?P<particle>{_PARTICLE}[ \t]+)?)\Z"
)
"""A cue that ends right where a name starts; searched in a short window before it."""
_CUE_WINDOW = 32
_CUE_GAP = " \t\r\n,:"
_UNKNOWN_NAME_CUES = (
    "me llamo", "mi nombre es", "my name is", "a nombre de", "firmado", "signed by", "soy", "i'm",
    "i’m", " am", "this is", "aquí", "aqui", " for", "para", "contacta", "contactar", "contact", "contacte", " con",
    " with", " to", "habla", "hablar", "escribe a", "pregunta por", "ask for", "de parte de", "on behalf of",
    "cliente", "customer", "titular", "holder", "reserva", "booking",
)  # fmt: skip
"""How the cues that can vouch for an unknown name end: a cheap test before the cue regex."""
_CLOSING_ENDINGS = (
    "atentamente", "saludos", "un saludo", "cordialmente", "regards", "best", "thanks", "thank you", "gracias",
    "cheers", "signed", "att", "atte", "--",
)  # fmt: skip
_TITLE_ENDINGS = TITLES + tuple(f"{title}." for title in TITLES)
_MAX_TOKENS = 5

_LOWER_WEAK_CUES = (
    "soy", "i'm", "i am", "hola", "hi", "hello", "hey", "gracias", "thanks", "dear", "saludos", "querido", "querida",
    "estimado", "estimada", "atentamente", "cordialmente", "regards",
)  # fmt: skip


def _phrases(phrases) -> str:
    """An alternation of phrases grouped by first letter, each letter one branch: the regex engine
    checks a branch's opening literal in C, so a position costs one check per letter, not per phrase."""
    grouped: dict[str, list[str]] = {}
    for phrase in phrases:
        rest = r"\s+".join(re.escape(word) for word in phrase[1:].split(" ")).replace("'", "['’]")
        grouped.setdefault(phrase[0], []).append(rest)
    return "|".join(f"{re.escape(head)}(?:{'|'.join(tails)})" for head, tails in grouped.items())


_LOWER_CUE_BODY = (
    rf"(?:(?P<strong>{_phrases(STRONG_PHRASES)})|{_phrases(_LOWER_WEAK_CUES)})\b(?=[ \t]*[,:]?[ \t]*\n?[ \t]*[{_LOW}])"
)
_LOWER_CUE = re.compile(rf"(?<![\w'’]){_LOWER_CUE_BODY}")
"""Cues before a name typed in lower case ("me llamo juan garcía", "hola maria"). What follows a cue
is only looked at, not consumed, so "hola, soy juan" finds both cues."""
_CUE_TRIGGERS = ("llamo", "nombre", "name", "firmado", "signed", "soy", "i'm", "i’m", "am", *_LOWER_WEAK_CUES)
"""A word of every lower-case cue. The cue regex runs only around their occurrences: scanning every
blank of a long text for a cue costs more than the rest of the name detector."""
_TRIGGER_WORDS = {head + word + tail: word for word in _CUE_TRIGGERS if " " not in word
                  for head in ("", "(", "¡", "¿", '"') for tail in ("", ",", ":", "!", ".")}  # fmt: skip
_TRIGGER_SET = frozenset(_TRIGGER_WORDS)
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
    """Everyday words: a capitalised one is a heading or a sentence opener, not an unknown surname."""


@functools.cache
def _gazetteer() -> _Gazetteer:
    """First names and surnames from Faker's locale data, loaded once on first use."""
    first: set[str] = set()
    last: set[str] = set()
    for locale in _FAKER_LOCALES:
        provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
        for target, groups in ((first, ("first_names_male", "first_names_female", "first_names")), (last, ("last_names",))):
            for group in groups:
                entries = getattr(provider, group, ())
                if isinstance(entries, (list, tuple, dict)):  # some locales compute it: skip those
                    for entry in entries:
                        target.update(w for w in fold(entry).split() if len(w) > 1)
    particles = {"de", "del", "la", "las", "los", "y", "van", "der", "den", "von", "da", "das", "dos", "di", "du"}
    excluded = particles | _NEVER_NAMES  # not months and peoples: Julio, Abril, Germán and June are names
    first -= excluded
    last -= excluded
    common = set(_CALENDAR_AND_PEOPLES | _NEVER_NAMES)
    for locale in _COMMON_WORD_LOCALES:
        common.update(fold(w) for w in importlib.import_module(f"faker.providers.lorem.{locale}").Provider.word_list)
    return _Gazetteer(frozenset(first), frozenset(last), frozenset(first | last), frozenset(common - first - last))


_KEYS: dict[str, str] = {}


def _key(word: str) -> str:
    key = _KEYS.get(word)
    if key is None:
        if len(_KEYS) > 1 << 16:
            _KEYS.clear()
        key = _KEYS[word] = fold(word)
    return key


def _known(key: str, names: frozenset[str]) -> bool:
    return key in names or ("-" in key and all(part in names for part in key.split("-")))


_WORD_ENDINGS = (
    "tion", "tions", "sion", "sions", "ment", "ments", "ness", "ity", "ities", "ing", "ings", "able", "ible", "ism",
    "isms", "ics", "ances", "ences", "ship", "ful", "less", "ize", "ized", "ation", "cion", "ciones", "siones",
    "mente", "idad", "idades", "miento", "mientos", "ismo",
)  # fmt: skip
"""How English and Spanish common nouns and adjectives end and names rarely do ("Variable Annotations").
Not "-ise", "-ence", "-ive": Françoise, Florence and Clive end that way."""


_NAME_LIKE: dict[str, bool] = {}


def _name_like(key: str) -> bool:
    """An unknown capitalised word that may be a name: not a tool, a function word or an everyday word."""
    verdict = _NAME_LIKE.get(key)
    if verdict is None:
        if len(_NAME_LIKE) > 1 << 16:
            _NAME_LIKE.clear()
        bare = key.split("'")[-1]
        verdict = _NAME_LIKE[key] = (
            len(bare) > 1
            and bare not in _gazetteer().common
            and bare not in _NEVER_NAMES
            and not bare.endswith(_WORD_ENDINGS)
            and not any(c.isdigit() for c in bare)
        )
    return verdict


def _tokens(text: str, start: int, end: int) -> list[_Token]:
    tokens, previous_end = [], start
    for m in _TOKEN.finditer(text, start, end):
        tokens.append(_Token(m.start(), m.end(), _key(m.group()), bool(text[previous_end : m.start()].strip())))
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
            continue  # "Susanne De Oliveira": a capitalised particle belongs to the name if a name follows
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
    if strength == "strong":  # "me llamo Abril Morata": after it even a month or a common word is a name
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
    first, last, known, _ = _gazetteer()
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
            if token.after_particle or _known(token.key, last) or (not _known(token.key, first) and _name_like(token.key)):
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


_ANY_CUE_ENDINGS = tuple(
    {e.lower() for e in TITLES + tuple(f"{t}." for t in TITLES)}
    | set(STRONG_PHRASES)
    | set(_UNKNOWN_NAME_CUES)
    | set(_CLOSING_ENDINGS)
    | {"hola", "hi", "hello", "hey", "dear", "estimado", "estimada", "querido", "querida", "buenos días", "buenos dias",
       "buenas", "buenas tardes", "i'm", "i’m", "i am"}  # fmt: skip
)
"""How every cue ends, lower-cased: one `endswith` spares the cue regex after most capitalised words."""


def _any_cue_before(text: str, start: int) -> bool:
    tail = text[max(0, start - 24) : start].rstrip(_CUE_GAP).lower()
    before, _, last = tail.rpartition(" ")
    return tail.endswith(_ANY_CUE_ENDINGS) or (last in _PARTICLE_WORDS and before.rstrip(_CUE_GAP).endswith(_ANY_CUE_ENDINGS))


def _cue_possible(text: str, start: int, key: str, known: frozenset[str]) -> bool:
    """A cheap test before the cue regex: a known name after any cue, an unknown one after a few."""
    if not start or text[start - 1] not in _CUE_GAP:  # '"True"', '(None': no cue fits
        return False
    if key in known:
        return _any_cue_before(text, start)
    if key in _NEVER_NAMES:
        return False
    return _unknown_name_cue_before(text, start)


def _unknown_name_cue_before(text: str, start: int) -> bool:
    tail = text[max(0, start - 24) : start]
    cue = tail.rstrip(_CUE_GAP)
    before, _, last = cue.rpartition(" ")
    # "Sr. da Cunha": the cue may stand before a particle; "a nombre de" ends in one.
    for cue in (cue, before.rstrip(_CUE_GAP)) if last.lower() in _PARTICLE_WORDS else (cue,):
        lowered = cue.lower()
        if cue.endswith(_TITLE_ENDINGS) or lowered.endswith(_UNKNOWN_NAME_CUES):
            return True
        if "\n" in tail[len(cue) :] and lowered.endswith(_CLOSING_ENDINGS):
            return True
    return False


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


class CapitalisedRuns:
    """The runs of capitalised words of a text ("Marta Vilaró i Puig", "Python"), for names and streets."""

    __slots__ = ("text", "spans", "_before_digit", "_after_number")

    def __init__(self, text: str):
        self.text = text
        self.spans = [(m.start(), m.end(), m.end(1)) for m in _RUN.finditer(text)]
        """(start, end, end of the first word) of each run."""
        self._before_digit: list[tuple[int, int]] | None = None
        self._after_number: list[tuple[int, int]] | None = None

    @property
    def before_digit(self) -> list[tuple[int, int]]:
        """Runs followed by a number, maybe after a blank or a comma: "Mayor 12", "Alcalá, 45", "España s/n"."""
        if self._before_digit is None:
            text = self.text
            self._before_digit = [
                (start, end)
                for start, end, _ in self.spans
                if text[end : end + 1] in _NUMBER_LEADS
                and (text[end : end + 1].isdigit() or text[end + 1 : end + 2].isdigit() or text[end + 2 : end + 3].isdigit()
                     or text.startswith(_NUMBER_WORDS, end + 1))  # fmt: skip
            ]
        return self._before_digit

    @property
    def after_number(self) -> list[tuple[int, int]]:
        """Runs right after a number and a blank: "221B Baker Street"."""
        if self._after_number is None:
            text = self.text
            self._after_number = [
                (start, end) for start, end, _ in self.spans
                if start > 1 and text[start - 1] in " \t" and text[start - 2] in _ALNUM
            ]  # fmt: skip
        return self._after_number


_NUMBER_LEADS = frozenset(" ,0123456789")
_NUMBER_WORDS = ("nº", "n.º", "Nº", "núm", "Núm", "num", "número", "s/n", "S/N", " nº", " s/n")
"""What stands between a street name and its number, or for it ("s/n", sin número)."""
_ALNUM = frozenset(string.ascii_letters + string.digits)


def capitalised_runs(text: str) -> CapitalisedRuns:
    return CapitalisedRuns(text)


def _capitalised_names(text: str, runs: CapitalisedRuns) -> list[tuple[int, int]]:
    known = _gazetteer().known
    found = []
    gap = _CUE_GAP
    for start, end, first_end in runs.spans:
        single = first_end == end
        if single:  # one word: a name only right after a cue
            if not start or text[start - 1] not in gap:  # spares the key lookup for most words
                continue
            key = _key(text[start:end])
            # An unknown everyday word ("Return", "Example") is no name after any cue but "me llamo".
            if key in known:
                if not _any_cue_before(text, start):
                    continue
            elif not _name_like(key) or not _unknown_name_cue_before(text, start):
                continue
            tokens = [_Token(start, end, key, False)]
        else:
            tokens = _tokens(text, start, end)
            found.extend((tokens[a].start, tokens[b - 1].end) for a, b in _first_last_sequences(tokens))
        # A cue sits before the run ("soy Rosa") or opens it ("Soy Rosa", "Mr Smith").
        for i, token in enumerate(tokens[:2]):
            if (single and not i) or _cue_possible(text, token.start, token.key, known):
                cue = _CUE_BEFORE.search(text, max(0, token.start - _CUE_WINDOW), token.start)
                count = cue and _after_cue(tokens[i:], _strength(cue))
                if count:
                    # "Sra. van Dijk": the particle between the cue and the name is the name's
                    start = cue.start("particle") if cue.group("particle") else token.start
                    found.append((start, tokens[i + count - 1].end))
                    break
    return found


def _lower_cues(lower: str, words: list[str]) -> list[re.Match[str]]:
    """The cues of `lower`, searched only in short windows around the words that can be part of one."""
    cues: dict[int, re.Match[str]] = {}
    for trigger in {_TRIGGER_WORDS[word] for word in _TRIGGER_SET.intersection(words)}:
        i = lower.find(trigger)
        while i != -1:
            for cue in _LOWER_CUE.finditer(lower, max(0, i - 16), min(len(lower), i + len(trigger) + 12)):
                cues.setdefault(cue.start(), cue)
            i = lower.find(trigger, i + len(trigger))
    return [cues[start] for start in sorted(cues)]


def _lowercase_names(text: str, lower: str, words: list[str]) -> list[tuple[int, int]]:
    """Names typed in lower case after a cue: anything name-like after a strong cue, known names otherwise."""
    known = _gazetteer().known
    found = []
    for cue in _lower_cues(lower, words):
        first = _LOWER_WORD.search(lower, cue.end(), min(len(lower), cue.end() + 8))
        if first is None or not text[first.start()].islower():
            continue  # capitalised: the other path's
        strong = cue.group("strong") is not None
        words = []
        for word in _LOWER_WORD.finditer(lower, first.start(), min(len(lower), first.start() + 80)):
            gap = lower[words[-1][1] if words else cue.end() : word.start()]
            if words and (gap.strip() or "\n" in gap):
                break
            words.append((word.start(), word.end(), _key(word.group())))
            if len(words) > _MAX_TOKENS + 2:
                break
        taken = 0
        for i, (_, _, key) in enumerate(words):
            if key in _LOWER_PARTICLES and i + 1 < len(words) and _known(words[i + 1][2], known) and taken:
                continue
            if _known(key, known) or (strong and i == 0 and _name_like(key)):
                taken = i + 1
            else:
                break
        if taken:
            found.append((words[0][0], words[taken - 1][1]))
    return found


def find_names(text: str, lower: str | None = None, runs: CapitalisedRuns | None = None,
               words: list[str] | None = None) -> list[tuple[int, int, str]]:  # fmt: skip
    """Candidate person names as (start, end, canonical); may overlap, the caller resolves.

    `lower` is `text` lowercased with the same length, `runs` its `capitalised_runs` and `words`
    `lower.split()`, when the caller already has them.
    """
    found = _capitalised_names(text, capitalised_runs(text) if runs is None else runs)
    lower = text.lower() if lower is None else lower
    found += _lowercase_names(text, lower, lower.split() if words is None else words)
    return [(start, end, " ".join(fold(text[start:end]).split())) for start, end in found]
