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
from collections.abc import Iterator

from pipelines.privacy.names import UPPERCASE_LETTERS, capitalised_runs, fold
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


_NUMBER_AFTER = re.compile(r"[ \t]*,?[ \t]*(?:(?i:n[º°o]\.?|núm\.?|número|num\.?)[ \t]*)?(?:\d|(?i:s/n))")
_ES_TYPE_BEFORE = re.compile(rf"(?<![\w/])(?i:{_ES_STREET_TYPES})[ \t]*(?:{_ES_PARTICLE}[ \t]+)*\Z")
_ES_TYPE_AT = re.compile(rf"(?i:{_ES_STREET_TYPES})(?!\w)")
_EN_NUMBER_BEFORE = re.compile(r"(?<![\w.,/\-])\d{1,5}[A-Za-z]?(?:-\d{1,5})?[ \t]+\Z")
_TYPE_WINDOW = 32



def _span(view: TextView, start: int, end: int) -> Span:
    value = view.text[start:end].rstrip(" \t,\n")
    return Span(start, start + len(value), "ADDRESS", value, " ".join(fold(value).split()))


def detect_addresses(view: TextView) -> list[Span]:
    """Addresses around the capitalised runs the name detector reads too: a street name is one.

    A Spanish address has a street type before or at the start of the run and a number after it;
    an English one has its number right before the run.
    """
    text = view.text
    runs = view.memo("capitalised_runs", lambda v: capitalised_runs(v.text))
    found = []
    for start, end in runs.before_digit:
        if _NUMBER_AFTER.match(text, end):
            # "Avda. Gran Vía, 217": the type before the run first, for "Gran Vía" is a type and a name
            street = _ES_TYPE_BEFORE.search(text, max(0, start - _TYPE_WINDOW), start) or _ES_TYPE_AT.match(text, start)
            address = street and _ES_ADDRESS.match(text, street.start())
            if address:
                found.append(_span(view, address.start(), address.end()))
    for start, _ in runs.after_number:
        number = _EN_NUMBER_BEFORE.search(text, max(0, start - 12), start)
        address = number and _EN_ADDRESS.match(text, number.start())
        if address:
            found.append(_span(view, address.start(), address.end()))
    return found
