"""Postal addresses in Spanish (and Catalan) and English: a street, a number, and what follows.

Spanish: a street type ("Calle", "C/", "Avda.", "Pza.", "Paseo", "Carrer", "Passeig"...), a name with
at least one capitalised word, a number ("12", "nº 45", "s/n"), then floor and door ("3º B", "bajo
izda."), a postcode (01000-52999) and a city. English: a number, capitalised words, a street suffix
("Street", "Ave", "Rd"...), then unit, city, state and ZIP or a UK postcode.

A street and its number are required: "la calle está cortada" is not an address and neither is a
lone postcode. The street name must be capitalised, so "connect via port 8080" stays.
"""

from __future__ import annotations

import re

from pipelines.privacy.names import UPPERCASE_LETTERS, fold
from pipelines.privacy.spans import Span
from pipelines.privacy.views import TextView

_UP = UPPERCASE_LETTERS
_ES_STREET_TYPES = (
    r"calle|c/|cl\.|c\.\s?/|avda\.?|avd\.|avenida|avinguda|av\.|plaza|pza\.|plaça|pl\.|paseo|p[º°]\.?|passeig|pg\.|carrer"
    r"|rambla|ronda|camino|carretera|ctra\.|traves[íi]a|glorieta|v[íi]a|callej[óo]n|urbanizaci[óo]n|urb\.|pol[íi]gono"
    r"|bulevar|alameda|pasaje|passatge|gran\s+v[íi]a"
)
_ES_NAME_WORD = rf"(?:[{_UP}][\w'’ªº.\-]*|[dl]['’][{_UP}][\w'’\-]*)"
_ES_PARTICLE = r"(?:de|del|la|las|los|el|dels|les|i|y|d['’]|l['’])"
_ES_ADDRESS = re.compile(
    rf"(?i:{_ES_STREET_TYPES})[ \t]*"
    rf"(?:(?:{_ES_PARTICLE}[ \t]+)*{_ES_NAME_WORD}[ \t]+){{0,5}}(?:{_ES_PARTICLE}[ \t]+)*{_ES_NAME_WORD}"
    r"[ \t]*,?[ \t]*(?:(?i:n[º°o]\.?|núm\.?|número|num\.?)[ \t]*)?(?:\d{1,4}(?:[ \t]?[A-Za-z](?!\w))?|(?i:s/n))(?![\w/])"
    r"(?:[ \t]*,?[ \t]*(?:\d{1,2}[º°ª](?:[ \t]*-?[ \t]*\d?[A-Za-zº°ª]{0,2}(?!\w))?|(?i:bajo|bj\.|entlo\.|ático|atico"
    r"|piso[ \t]+\d+|planta[ \t]+\d+|puerta[ \t]+\w+|pta\.[ \t]*\w+|esc(?:alera)?\.?[ \t]*\w+|izq(?:da|uierda)?\.?"
    r"|izda\.?|dcha\.?|derecha)(?!\w)))*"
    rf"(?:[ \t]*,?[ \t]*\(?(?:0[1-9]|[1-4]\d|5[0-2])\d{{3}}(?!\d)\)?"
    rf"(?:[ \t]*,?[ \t]*[{_UP}][\w'’\-]*(?:[ \t]+(?:de(?:l)?[ \t]+|la[ \t]+)?[{_UP}][\w'’\-]*){{0,2}})?)?"
)
_EN_SUFFIXES = (
    r"Street|St|Avenue|Ave|Av|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Way|Terrace|Ter|Parkway|Pkwy"
    r"|Square|Sq|Highway|Hwy|Circle|Cir|Close|Crescent|Cres|Row|Mews|Gardens|Grove|Walk|Alley|Plaza|Trail|Pike"
)
_EN_ADDRESS = re.compile(
    r"\d(?<![\w.,/\-]\d)\d{0,4}[A-Za-z]?(?:-\d{1,5})?[ \t]+(?:[A-Z][\w'’.\-]*[ \t]+){1,4}"
    rf"(?:{_EN_SUFFIXES})\b\.?"
    r"(?:,?[ \t]*(?:Apt|Apartment|Suite|Ste|Unit|Flat|Floor|Fl|#)\.?[ \t]*[\w\-]+)?"
    r"(?:,?[ \t]*\n?[ \t]*[A-Z][\w.'’\-]*(?:[ \t]+[A-Z][\w.'’\-]*){0,3}"  # city
    r"(?:,?[ \t]*[A-Z]{2}(?![\w]))?"  # state
    r"(?:,?[ \t]*(?:\d{5}(?:-\d{4})?|[A-Z]{1,2}\d[A-Z\d]?[ \t]*\d[A-Z]{2})(?!\w))"  # ZIP or UK postcode
    r")?"
)


_ES_TYPE_WORDS = frozenset(
    """calle c/ cl. avda avda. avd. avenida avinguda av. plaza pza. plaça pl. paseo pº p.º passeig pg. carrer rambla
    ronda camino carretera ctra. travesía travesia glorieta vía via callejón callejon urbanización urbanizacion urb.
    polígono poligono bulevar alameda pasaje passatge gran""".split()  # noqa: SIM905 - reads as prose
)
_EN_SUFFIX_WORDS = frozenset(
    word + tail
    for word in """street st avenue ave av road rd boulevard blvd lane ln drive dr court ct place pl way terrace ter
    parkway pkwy square sq highway hwy circle cir close crescent cres row mews gardens grove walk alley plaza trail
    pike""".split()  # noqa: SIM905
    for tail in ("", ",", ".", ";")
)
_EN_NUMBER_AND_NAME = re.compile(r"(?<![\w.,/\-])\d{1,5}[A-Za-z]?(?:-\d{1,5})?[ \t]+(?:[A-Z][\w'’.\-]*[ \t]+){1,4}\Z")
_EN_WINDOW = 64


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


def detect_addresses(view: TextView) -> list[Span]:
    """Addresses found from their street word: a Spanish street type opens one ("Calle", "C/"),
    an English suffix closes its street ("Street", "Ave"), after a number and capitalised words.

    The words come from the text's own words, a set intersection: most texts hold none.
    """
    text, lower, words = view.text, view.lower, view.word_set
    found = []
    types = {word.strip(",;:") for word in _ES_TYPE_WORDS & words}
    if "c/" in lower:  # "C/Mayor" is one word
        types.add("c/")
    for word in types:
        for i in _occurrences(lower, word):
            address = _ES_ADDRESS.match(text, i)
            if address:
                found.append(_span(view, address.start(), address.end()))
    for word in {word.rstrip(",.;") for word in _EN_SUFFIX_WORDS & words}:
        for i in _occurrences(lower, word):
            if not text[i].isupper():
                continue
            number = _EN_NUMBER_AND_NAME.search(text, max(0, i - _EN_WINDOW), i)
            address = number and _EN_ADDRESS.match(text, number.start())
            if address:
                found.append(_span(view, address.start(), address.end()))
    return found
