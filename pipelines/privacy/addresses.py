"""Postal addresses in Spanish (and Catalan) and English: a street, a number, and what follows.

Spanish: a type of street (`street_types.ES_STREET_TYPES`: "Calle", "C/", "Avda.", "Cuesta de",
"Pasadizo", "Cra."...), a name with at least one capitalised word, a number ("12", "nº 45", "s/n"),
or a numbered street as Colombia and Argentina write them ("Calle 187 Bis # 4-32 Este", "Av. 6 N°
481"); then floor, door and unit ("3º B", "bajo izda.", "Piso 3", "Depto. 510"), and a postcode with
its city, on the same line ("28013 Madrid") or the next ("Cantabria, 47999", "Paraná 3100, Entre
Ríos").

English: a number, capitalised words, a USPS street suffix (`street_types`: every suffix of
Publication 28, Appendix C1, abbreviations too), then a unit ("Apt. 290", "Suite 102") and the city
with its state and ZIP, a UK, Canadian or Australian postcode, on the same line or the next ones. A
suffix that is an everyday word ("Park", "Key", "Station") needs that unit, that city and postcode,
or an address cue before it ("ship to", "my address is"): "Chapter 3 Event Loop" stays.

A street and its number are required: "la calle está cortada" is not an address and neither is a
lone postcode. The street name must be capitalised, so "connect via port 8080" stays.
"""

from __future__ import annotations

import re

from pipelines.privacy.names import UPPERCASE_LETTERS, fold
from pipelines.privacy.spans import Span
from pipelines.privacy.street_types import (
    ALL_EN_SUFFIXES,
    EN_WORD_SUFFIXES,
    ES_NUMBERED_TYPES,
    ES_STREET_TYPES,
    ES_WORD_TYPES,
)
from pipelines.privacy.views import TextView

_UP = UPPERCASE_LETTERS
_PUNCTUATION_AFTER = (
    "",
    ",",
    ".",
    ";",
    ":",
    '"',
    "'",
    ")",
    '",',
    '".',
    "),",
    ").",
    ".,",
    "\u201d",
    "\u2019",
)
"""What `str.split` leaves glued to a street word: "Street,", 'Street"' (a JSON value), "St.)"."""


# --- Spanish --------------------------------------------------------------------------------------
def _alternation(types: list[str]) -> str:
    two_words = {"gran": r"gran[ \t]+v[íi]a", "eje": r"eje[ \t]+vial"}
    return "|".join(two_words.get(t, re.escape(t)) for t in sorted(types, key=len, reverse=True))


_ES_ANY_CASE, _ES_CAPITALISED, _ES_NUMBERED = (
    ES_STREET_TYPES.split(),
    ES_WORD_TYPES.split(),
    ES_NUMBERED_TYPES.split(),
)
_ES_CARDINAL_AFTER = r"(?:[ \t]+(?:Sur|Norte|Este|Oeste)(?!\w))?"
_ES_NAME_WORD = rf"(?:[{_UP}](?:[\w'’ªº.\-]*[\w'’ªº.])?|[dl]['’][{_UP}][\w'’\-]*)"
_ES_PARTICLE = r"(?:de|del|la|las|los|el|dels|les|i|y|d['’]|l['’])"
_ES_NUMBER_MARK = r"(?:#|(?i:n[º°o]\.?|núm\.?|número|num\.?))"
_ES_PLOT = r"(?i:km\.?[ \t]*\d{1,4}(?:[,.]\d{1,3})?|(?:parcela|solar|lote|manzana|mz\.|nave)[ \t]*\d{1,5}[A-Za-z]?)"
"""Where a road or an estate has no street numbers: a kilometre point ("Ctra. de Valencia km 7,5"),
a plot ("Urb. Los Pinos, parcela 14") or a unit of an industrial estate ("Polígono Sur, nave 3")."""
_ES_NUMBER = (
    rf"(?:(?:{_ES_NUMBER_MARK}[ \t]*)?(?:\d{{1,5}}(?:[ \t]*-[ \t]*\d{{1,4}}|[ \t]?[A-Za-z](?!\w))?{_ES_CARDINAL_AFTER}|(?i:s/n))"
    rf"|{_ES_PLOT})(?![\w/])"
)
_ES_NAMED_STREET = (
    rf"[ \t]*(?:(?:{_ES_PARTICLE}[ \t]+)*{_ES_NAME_WORD}[ \t]+){{0,5}}(?:{_ES_PARTICLE}[ \t]+)*{_ES_NAME_WORD}"
    rf"[ \t]*,?[ \t]*{_ES_NUMBER}"
)
_ES_CARDINAL = r"(?:[ \t]+(?i:sur|norte|este|oeste))?"
_ES_NUMBERED_STREET = (
    r"(?:[ \t]+(?i:calle|carrera|cl\.|cra\.|cr\.))?[ \t]*\d{1,3}(?:[ \t]?[A-Za-zªº])?(?:[ \t]+(?i:bis)(?:[ \t]+[A-Z](?!\w))?)?"
    rf"{_ES_CARDINAL}[ \t]*(?:#|(?i:n[º°o]\.?|no\.|núm\.?))[ \t]*\d{{1,4}}[A-Za-z]?(?:[ \t]*-[ \t]*\d{{1,4}})?{_ES_CARDINAL}"
    r"(?![\w/])"
)
"""Colombia's "Calle 187 Bis R # 4-32 Este", "Avenida carrera 27 # 7-31"; Argentina's "Av. 6 N°
481"."""
_ES_UNIT = (
    r"(?:\d{1,2}[º°ª](?:[ \t]*-?[ \t]*\d?[A-Za-zº°ª]{0,2}(?!\w))?(?:[ \t]+(?i:planta|piso)(?!\w))?"
    r"|(?i:bajo|bj\.|entlo\.|ático|atico|izq(?:da|uierda)?\.?|izda\.?|dcha\.?|derecha)(?!\w)"
    r"|(?i:piso|planta|puerta|pta\.|esc(?:alera)?\.?|apartamento|apto\.?|apt\.?|depto\.?|dpto\.?|dto\.?|interior"
    r"|int\.|edificio|edif\.?|local|oficina|of\.|casa|bodega|torre|etapa|bloque|portal|nave)[ \t]*[\w\-]{1,5}(?!\w))"
)
_ES_CITY_WORD = rf"[{_UP}][\w'’\-]*(?:\.[\w'’\-]+)*"
_ES_CITY = rf"{_ES_CITY_WORD}(?:[ \t]+(?:(?:de|del|la|las|los|el|y)[ \t]+)*{_ES_CITY_WORD}){{0,4}}"
_ES_TAIL = (
    # floor and door after a comma, a line break or a dash ("57 - 3º Izq")
    rf"(?:[ \t]*[,\n\-]?[ \t]*{_ES_UNIT})*"
    rf"(?:[ \t]*,?[ \t]*\(?(?:(?:0[1-9]|[1-4]\d|5[0-2])\d{{3}}|\d{{6}})(?!\d)\)?(?:[ \t]*,?[ \t]*{_ES_CITY})?"  # 28013 Madrid, 110111 Bogotá
    # 259074\nFúquene, Cundinamarca
    rf"|[ \t]*[,\n][ \t]*\n?[ \t]*\d{{6}}[ \t]*\n[ \t]*{_ES_CITY}(?:[ \t]*,[ \t]*{_ES_CITY})?"
    rf"|[ \t]*[,\n][ \t]*\n?[ \t]*{_ES_CITY}(?:[ \t]*,[ \t]*(?:{_ES_CITY}|[A-Z]{{2,4}}))?[ \t]*,?[ \t]*\d{{4,7}}(?:-\d{{4}})?(?!\d)"
    # Cantabria, 47999 / Vieja España, MOR 46869 / Paraná 3100, Entre Ríos
    rf"(?:[ \t]*,[ \t]*{_ES_CITY})?)?"
)
_ES_ADDRESS = re.compile(
    rf"(?i:{_alternation(_ES_ANY_CASE)}|{_alternation(_ES_CAPITALISED)})"
    rf"(?:{_ES_NAMED_STREET}|{_ES_NUMBERED_STREET}){_ES_TAIL}"
    rf"|(?i:{_alternation(_ES_NUMBERED)})(?:[ \t]*{_ES_PARTICLE}[ \t]+{_ES_NAMED_STREET}|{_ES_NUMBERED_STREET}"
    rf"|[ \t]*{_ES_NAME_WORD}(?:[ \t]+{_ES_NAME_WORD}){{1,4}}[ \t]*,?[ \t]*{_ES_NUMBER}"
    rf"|[ \t]*(?:(?:{_ES_PARTICLE}[ \t]+)*{_ES_NAME_WORD}[ \t]+){{0,5}}(?:{_ES_PARTICLE}[ \t]+)*{_ES_NAME_WORD}[ \t]*"
    rf"{_ES_NUMBER_MARK}[ \t]*\d{{1,5}}(?![\w/])"
    rf"|[ \t]*{_ES_NAME_WORD}[ \t]*,?[ \t]*{_ES_NUMBER}(?=[ \t]*,?[ \t]*(?:0[1-9]|[1-4]\d|5[0-2])\d{{3}}(?!\d))){_ES_TAIL}"
)
"""`detect_addresses` tries a capitalised-only type only where the text has it capitalised."""
_ES_TYPE_WORDS = frozenset(t for t in (*_ES_ANY_CASE, *_ES_NUMBERED) if "/" not in t)
_ES_CAPITALISED_WORDS = frozenset(_ES_CAPITALISED)

# --- English --------------------------------------------------------------------------------------
_EN_SUFFIX_FORMS = frozenset(word + tail for word in ALL_EN_SUFFIXES for tail in _PUNCTUATION_AFTER)
_EN_NUMBER_AND_NAME = re.compile(
    r"(?:(?<![\w.,/\-])\d{1,5}[A-Za-z]?(?:[/\-]\d{1,5}[A-Za-z]?)?[ \t]+"
    r"|(?<![\w\-])(?:Flat|Studio|Apartment|Apt|Unit|Suite|Level)\.?[ \t]*\w{1,5}[ \t]+\d{1,5}[A-Za-z]?[ \t]+"
    r"|(?<![\w\-])(?:Flat|Studio|Apartment|Apt|Unit|Suite)\.?[ \t]*\w{1,5}[ \t]*(?:,[ \t]*|\n)[ \t]*)"
    r"(?:(?:[A-Z][\w'’.\-]*|\d{1,4}(?:st|nd|rd|th))[ \t]+){1,4}\Z"
)
"""The number and the name before a suffix, its words capitalised or ordinals ("77 W 45th St"); in
Britain a flat's number may stand before a street without one ("Flat 23\nConnor Vista")."""
_EN_WINDOW = 64
_EN_UNIT = (
    r"(?:(?:Apt|Apartment|Suite|Ste|Unit|Flat|Floor|Fl|Room|Rm|Bldg|Building|Studio|Level|Lot|Box|#)\.?[ \t]*#?[\w\-]{1,6}"
    r"|(?:[A-Z][a-z]{2,7}|\d{1,3}(?:st|nd|rd|th))[ \t]+(?:Floor|Fl\.?))(?!\w)"
)
"""A unit after the street: "Apt. 290", "Suite 102", and a floor named by its ordinal ("Fifth
Floor", "3rd Fl")."""
_EN_BREAK = r"(?:[ \t]*,[ \t]*\n?|[ \t]*\n|[ \t]+)[ \t]*"
"""Between an address's parts: a comma, a line break or a blank."""
_EN_CITY = r"[A-Z][\w.'’\-]*(?:[ \t]+[A-Z][\w.'’\-]*){0,3}"
_US_STATES = (
    "AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH OK OR PA"
    " RI SC SD TN TX UT VT VA WA WV WI WY AS GU MP PR VI FM MH PW AA AE AP"
)
_CA_PROVINCES = "AB BC MB NB NL NS NT NU ON PE QC SK YT"
_AU_STATES = "NSW VIC QLD WA SA TAS ACT NT"
_EN_STATE_AND_POSTCODE = (
    rf"(?:(?:{'|'.join(_US_STATES.split())})(?:[ \t]+|[ \t]*\n[ \t]*)\d{{5}}(?:-\d{{4}})?"
    rf"|(?:{'|'.join(_CA_PROVINCES.split())})[ \t]+[A-Z]\d[A-Z][ \t]?\d[A-Z]\d"
    rf"|(?:{'|'.join(_AU_STATES.split())}),?[ \t]+\d{{4}}"
    r"|[A-Z]{1,2}\d[A-Z\d]?[ \t]*\d[A-Z]{2})(?!\w)"
)
"""A US state and ZIP (the ZIP may start the next line, as license notices wrap "Boston,
MA\n02110-1301"), a Canadian province and postal code, an Australian state and postcode, or a UK
postcode: how an English address ends, and specific enough that "RFC 5737" is none."""
_EN_TAIL = re.compile(
    rf"\.?(?P<unit>,?[ \t]*{_EN_UNIT})?(?P<city>{_EN_BREAK}{_EN_CITY},?{_EN_BREAK}{_EN_STATE_AND_POSTCODE})?"
)
_EN_POSTCODE_LINE = re.compile(rf"(?<![\w\-]){_EN_STATE_AND_POSTCODE}")
_EN_STREET_THEN_CITY = re.compile(
    rf"(?:(?:(?<![\w.,/\-])(?:(?:Flat|Unit|Suite|Apt\.?|Level)[ \t]*\w{{1,5}}[ \t]+)?\d{{1,5}}[A-Za-z]?(?:[/\-]\d{{1,5}}[A-Za-z]?)?[ \t]+"
    rf"|{_EN_UNIT}[ \t]*(?:,[ \t]*|\n)[ \t]*)"
    rf"(?:[A-Z][\w'’.\-]*[ \t]+){{0,3}}[A-Z][\w'’.\-]*(?:,?[ \t]*{_EN_UNIT})?{_EN_BREAK}{_EN_CITY}"
    r"|(?:(?:Unit|PSC|CMR)[ \t]+\d{4},?[ \t]+Box[ \t]+\d{4}|(?:USNS|USNV|USS|USCGC)[ \t]+[A-Z][\w'’\-]*)"
    rf"{_EN_BREAK}(?:APO|FPO|DPO)),?{_EN_BREAK}\Z"
)
"""A street whatever its suffix ("97 Catherine Pathway", "Flat 23\nConnor Vista"), then the city,
before a state and postcode: Australian and British streets end in words USPS does not list."""
_EN_STREET_WINDOW = 160
_EN_CUE = re.compile(
    r"(?:address|addr\.|ship(?:ped)?\s+(?:it\s+)?to|send\s+(?:it\s+)?to|deliver(?:ed)?\s+(?:it\s+)?to|mail\s+(?:it\s+)?to"
    r"|liv(?:e|es|ing)\s+(?:at|on)|located\s+at|moved?\s+to|office\s+(?:is\s+)?at|dirección|direccion|domicilio"
    r"|vivo\s+en|env[ií](?:alo|ad(?:lo)?|a(?:lo)?)\s+a)(?:\s+(?:is|es))?\W{0,12}\Z"
)
"""Words that announce an address ("my address is", "ship it to", "mi dirección es"), right before
it."""
_EN_CUE_WINDOW = 40


def _span(view: TextView, start: int, end: int) -> Span:
    value = view.text[start:end].rstrip(" \t,\n")
    return Span(start, start + len(value), "ADDRESS", value, " ".join(fold(value).split()))


def _occurrences(lower: str, word: str):
    """Where `word` stands as a word of its own in `lower`."""
    i, n = lower.find(word), len(lower)
    while i != -1:
        j = i + len(word)
        if not (i and lower[i - 1].isalnum()) and not (j < n and lower[j].isalnum()):
            yield i
        i = lower.find(word, j)


def _words(found: set[str], forms: frozenset[str]) -> set[str]:
    """The street words among a text's words, without the punctuation glued to them."""
    return {word.rstrip(",.;:\"')\u201d\u2019") or word for word in forms & found}


_POSTCODE_HINT = re.compile(
    r"\d(?:(?<=[A-Z][ \t\n]\d)\d{3}|(?<=[A-Z],[ \t]\d)\d{3}|[A-Z](?:\d|[A-Z](?![A-Za-z])))"
)
"""What every state-and-postcode line holds: four digits right after a capital and a blank (a state
and its ZIP or postcode), or a digit and a capital (Canada's "K7C 1Y2", the UK's "NW1 6XE"). It
opens with a digit class, which the regex engine skips to at C speed, and years or ports alone fail
it at once; the full line is then matched around each hit alone."""
_POSTCODE_REACH = 12


def _street_before_postcode(view: TextView) -> list[Span]:
    text, found, end = view.text, [], -1
    for hint in _POSTCODE_HINT.finditer(text):
        if hint.start() < end:
            continue
        line = _EN_POSTCODE_LINE.search(
            text,
            max(0, hint.start() - _POSTCODE_REACH),
            min(len(text), hint.end() + _POSTCODE_REACH),
        )
        if line is None:
            continue
        end = line.end()
        street = _EN_STREET_THEN_CITY.search(
            text, max(0, line.start() - _EN_STREET_WINDOW), line.start()
        )
        if street:
            found.append(_span(view, street.start(), line.end()))
    return found


_DIGIT = re.compile(r"\d")


def _english(view: TextView, suffix: str, i: int) -> Span | None:
    text = view.text
    if _DIGIT.search(text, max(0, i - _EN_WINDOW), i) is None:
        return (
            None  # no number before it ("Is it...", "Key points"): no street, and no regex to try
        )
    number = _EN_NUMBER_AND_NAME.search(text, max(0, i - _EN_WINDOW), i)
    if number is None:
        return None
    tail = _EN_TAIL.match(text, i + len(suffix))
    if suffix in EN_WORD_SUFFIXES and not (tail.group("unit") or tail.group("city")):
        if not _EN_CUE.search(view.lower, max(0, number.start() - _EN_CUE_WINDOW), number.start()):
            return None  # "Chapter 3 Event Loop": an everyday word closes no street on its own
    return _span(view, number.start(), tail.end())


def detect_addresses(view: TextView) -> list[Span]:
    """Addresses found from their street word: a Spanish type opens one ("Calle", "C/"), an English
    suffix closes its street ("Street", "Ave", "Bend"), after a number and capitalised words.

    The words come from the text's own words, a set intersection: most texts hold none.
    """
    text, lower, words = view.text, view.lower, view.word_set
    found = []
    types = _words(words, _ES_TYPE_FORMS)
    if "c/" in lower:  # "C/Mayor" is one word
        types.add("c/")
    for word in types:
        capitalised_only = word in _ES_CAPITALISED_WORDS
        for i in _occurrences(lower, word) if word[-1].isalnum() else _prefixed(lower, word):
            if capitalised_only and not text[i].isupper():
                continue
            address = _ES_ADDRESS.match(text, i)
            if address:
                found.append(_span(view, address.start(), address.end()))
    for suffix in _words(words, _EN_SUFFIX_FORMS):
        for i in _capitalised_occurrences(text, suffix):
            address = _english(view, suffix, i)
            if address:
                found.append(address)
    return found + _street_before_postcode(view)


def _capitalised_occurrences(text: str, word: str):
    """Where `word` stands capitalised ("Bend") or in capitals ("BEND"): a suffix closes a street so
    written, and "is", "run" or "way" in lower case are far too common to try one by one."""
    for form in {word.capitalize(), word.upper()}:
        yield from _occurrences(text, form)


def _prefixed(lower: str, word: str):
    """Where a type ending in punctuation ("avda.", "c/") starts a word: nothing alphanumeric before
    it."""
    i = lower.find(word)
    while i != -1:
        if not (i and lower[i - 1].isalnum()):
            yield i
        i = lower.find(word, i + len(word))


_ES_TYPE_FORMS = frozenset(
    t + tail for t in _ES_TYPE_WORDS | _ES_CAPITALISED_WORDS for tail in _PUNCTUATION_AFTER
)
