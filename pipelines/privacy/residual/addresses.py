"""Postal addresses, Spanish and English: a type of street or a state and postcode, a name and a
number."""

from __future__ import annotations

import re

ES_STREET_TYPES = (
    "calle",
    "c/",
    "avda",
    "avenida",
    "av.",
    "plaza",
    "pza",
    "paseo",
    "carrer",
    "passeig",
    "rambla",
    "ronda",
    "camino",
    "carretera",
    "travesía",
    "glorieta",
    "gran vía",
    "callejón",
    "pasaje",
    "pasadizo",
    "urbanización",
    "bulevar",
    "alameda",
    "costanilla",
    "cañada",
    "cra.",
    "ctra",
    "crta",
    "carr.",
    "urb",
    "camí",
    "cami",
    "cno",
    "trav",
    "travesia",
    "trva",
    "gta",
    "glta",
    "rbla",
    "rda",
    "pso",
    "po",
    "p.o",
    "pg",
    "polígono",
    "poligono",
    "pol",
    "callejon",
    "cjón",
    "cjon",
    "blvd",
    "plaça",
    "placa",
    "avinguda",
    "avgda",
)
"""In any case; each may take a dot ("Avda.", "Pza."). The text is NFKC-folded first: "Pº" reads
"Po"."""
ES_CAPITALISED_TYPES = (
    "Cuesta",
    "Carrera",
    "Diagonal",
    "Transversal",
    "Calzada",
    "Privada",
    "Circuito",
    "Retorno",
    "Prolongación",
    "Vial",
    "Acceso",
    "Ampliación",
    "Andador",
    "Cerrada",
    "Circunvalación",
    "Continuación",
    "Corredor",
    "Eje vial",
    "Periférico",
    "Peatonal",
    "Viaducto",
    "Via",
    "Vía",
    "Boulevard",
    "Blv.",
    "Diag.",
    "Psje.",
    "C.",
    "Cl.",
    "Cr.",
    "Dg.",
    "Tr.",
    "Urb.",
)
"""Types of street that are everyday words too ("clave privada RSA 2048"): only capitalised."""
_US_STATES = (
    "AL|AK|AZ|AR|CA|CO|CT|DE|DC|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|NC|ND|OH|OK|OR"
    "|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|AS|GU|MP|PR|VI|FM|MH|PW|AA|AE|AP"
)
_STATE_AND_POSTCODE = (
    rf"(?:(?:{_US_STATES})(?:[ \t]+|[ \t]*\n[ \t]*)\d{{5}}(?:-\d{{4}})?|(?:AB|BC|MB|NB|NL|NS|NT|NU|ON|PE|QC|SK|YT)[ \t]+[A-Z]\d[A-Z][ \t]?\d[A-Z]\d"
    r"|(?:NSW|VIC|QLD|WA|SA|TAS|ACT|NT),?[ \t]+\d{4}|[A-Z]{1,2}\d[A-Z\d]?[ \t]*\d[A-Z]{2})(?!\w)"
)
"""A US state and ZIP, a Canadian province and postal code, an Australian state and postcode, a UK
postcode."""
_EN_STREET_WORDS = (
    "Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Way|Terrace|Parkway|Pkwy|Square"
    "|Highway|Hwy|Circle|Alley|Plaza|Trail|Crescent|Close|Grove|Bend|Bluff|Bayou|Canyon|Causeway|Creek|Expressway"
    "|Freeway|Heights|Hollow|Knoll|Manor|Meadows?|Orchard|Pike|Ridge|Skyway|Stravenue|Turnpike|Viaduct"
)
"""English street suffixes that name little else; before a state and postcode any capitalised word
ends a street."""
_ES_NAME = (
    r"[A-ZÁÉÍÓÚÑ][\w'.\-]*(?:[ \t]+[\w'.\-]+){0,6}?,?[ \t]+"
    r"(?:(?:(?i:n[º°o]\.?|núm\.?|#|km\.?|parcela|solar|lote|manzana|nave)[ \t]*)?\d{1,4}\b|(?i:s/n)(?!\w))"
)
"""A street's name and its number, on one line: "nº 12" (NFKC reads "no 12"), a road's "km 7", a
plot, "s/n"."""
_ES_STREET_AT = re.compile(
    rf"(?i:(?:{'|'.join(map(re.escape, ES_STREET_TYPES))})\.?\s+(?:(?:de|del|la|las|los|d'|l')\s+)*"
    # The name is a word other than an article: "ronda los 5470 euros" is a sum ("is about"), not a
    # street; nor one lower-case letter, Perl's repetition after a list ("[qw/b a d c/ x 50]"): a
    # lettered street is capitalised.
    rf"(?!(?:de|del|la|las|los|el)\b|(?-i:[a-z])[ \t]){_ES_NAME})"
)
"""A name in any case after these: "vivo en calle los olivos 5"."""
_C_LANGUAGE_BEFORE = (
    "written in|implemented in|coded in|programmed in|code in|extensions in|modules in|functions in"
    "|library in|rewritten in|in plain|in pure|in ANSI"
)
_THE_C_LANGUAGE = (
    "(?!(?:"
    + "|".join(rf"(?<=(?<![\w\-]){w}[ \t])" for w in _C_LANGUAGE_BEFORE.split("|"))
    + r")C\.)"
)
"""Not "C." where it ends a sentence on the language ("written in C. Python 3 calls it"); "to C.
Roca 4" is a street."""
_ES_CAPITALISED_AT = re.compile(
    rf"{_THE_C_LANGUAGE}(?:{'|'.join(map(re.escape, ES_CAPITALISED_TYPES))})\s+(?:(?i:de|del|la|las|los|d'|l')\s+)*"
    rf"(?!(?i:de|del|la|las|los|el)\b){_ES_NAME}"
)
_ES_NUMBERED_AT = re.compile(
    # A numbered street: "Avenida 185 A N° 33", "Calle 187 Bis # 4-32".
    rf"(?i:{'|'.join(map(re.escape, ES_STREET_TYPES))}|{'|'.join(map(re.escape, ES_CAPITALISED_TYPES))})\.?\s+\d{{1,4}}"
    r"(?:\s?[A-Za-z]|\s+(?i:bis))?\s*(?:#|(?i:n[º°o]\.?|no\.))\s*\d{1,4}"
)

_EN_STREET = re.compile(
    rf"\d(?<![\w.,/\-]\d)\d{{0,4}}[A-Za-z]?[ \t]+(?:(?:[A-Z][\w'.\-]*|\d{{1,4}}(?:st|nd|rd|th))[ \t]+){{1,3}}(?:{_EN_STREET_WORDS})\b"
)
"""A number, capitalised words or ordinals ("77 W 45th St"), a street suffix."""
_POSTCODE_HINT = re.compile(r"\d(?:\d{3}|[A-Z]\d|[A-Z]{2}(?![A-Za-z]))")
_POSTCODE_LINE = re.compile(rf"(?<![\w\-]){_STATE_AND_POSTCODE}")
_STREET_AND_CITY_BEFORE = re.compile(
    r"(?:(?<![\w.,/\-])\d{1,5}[A-Za-z]?(?:/\d{1,5})?[ \t]+|\b(?:Flat|Studio|Apartment|Unit)[ \t]+\w+[ \t]*\n[ \t]*)"
    r"(?:[A-Z][\w'.\-]*[ \t]+){0,3}[A-Z][\w'.\-]*"
    r"(?:,?[ \t]*(?:Apt|Apartment|Suite|Ste|Unit|Flat|Studio|#)\.?[ \t]*[\w\-]+)?"
    r"(?:[ \t]*,[ \t]*\n?|[ \t]*\n)[ \t]*(?:[A-Z][\w.'\-]*[ \t]+){0,3}[A-Z][\w.'\-]*(?:,?[ \t]+|[ \t]*\n[ \t]*)\Z"
)
_MILITARY = re.compile(r"[ADF]PO[ \t]+A[AEP][ \t]+\d{5}\b")
"""US military mail: "FPO AE 09051" names a ship or a unit."""


def _spanish_address(text: str) -> re.Match[str] | None:
    """A type of street, a name and a number, or a numbered street: tried only where a type stands
    (found with `str.find`, faster than a regex alternation of forty words), in any case or, for the
    everyday words, capitalised."""
    lowered = text.lower()
    for haystack, words, at in (
        (lowered, ES_STREET_TYPES, _ES_STREET_AT),
        (text, ES_CAPITALISED_TYPES, _ES_CAPITALISED_AT),
    ):
        for word in words:
            i = haystack.find(word)
            while i != -1:
                if not (i and haystack[i - 1].isalnum()):
                    m = at.match(text, i) or _ES_NUMBERED_AT.match(text, i)
                    if m:
                        return m
                i = haystack.find(word, i + len(word))
    return None


def _english_address(text: str) -> re.Match[str] | None:
    """A number, capitalised words and a street suffix; or any street, its city and a state and
    postcode after them; or US military mail."""
    m = _EN_STREET.search(text)
    if m:
        return m
    end = -1
    for hint in _POSTCODE_HINT.finditer(text):
        if hint.start() < end:
            continue
        line = _POSTCODE_LINE.search(
            text, max(0, hint.start() - 12), min(len(text), hint.end() + 12)
        )
        if line is None:
            continue
        end = line.end()
        if _STREET_AND_CITY_BEFORE.search(text, max(0, line.start() - 160), line.start()):
            return line
    return _MILITARY.search(text) if "PO A" in text else None


def address_like(text: str) -> re.Match[str] | None:
    """The first Spanish address in `text`, else the first English one."""
    return _spanish_address(text) or _english_address(text)
