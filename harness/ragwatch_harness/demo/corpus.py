"""The demo corpus: Python's language reference as shipped in `pydoc_data`, so every machine has it.

Topics are split into chunks of paragraph groups (about 100-200 words) at section boundaries.
A chunk id carries a hash of the chunk's text, so a different Python version reads as a corpus
refresh instead of silently pointing old ids at new text.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from pydoc_data.topics import topics as _PYDOC_TOPICS

MIN_WORDS, MAX_WORDS = 100, 200
_UNDERLINE = re.compile(r"^([*=\-~^])\1+$")
_STATEMENT = re.compile(r'^The "(\w+)" statement$')

SPANISH_SUBJECTS = {
    "assignment": "las sentencias de asignación",
    "async": "las corrutinas",
    "atom-identifiers": "los identificadores",
    "atom-literals": "los literales",
    "attribute-access": "el acceso a atributos personalizado",
    "attribute-references": "las referencias a atributos",
    "augassign": "la asignación aumentada",
    "await": "la expresión await",
    "binary": "las operaciones aritméticas binarias",
    "bitwise": "las operaciones bit a bit",
    "bltin-code-objects": "los objetos código",
    "bltin-ellipsis-object": "el objeto Ellipsis",
    "bltin-null-object": "el objeto None",
    "bltin-type-objects": "los objetos tipo",
    "booleans": "las operaciones booleanas",
    "callable-types": "los objetos invocables",
    "calls": "las llamadas a funciones",
    "class": "la definición de clases",
    "comparisons": "las comparaciones",
    "compound": "las sentencias compuestas",
    "context-managers": "los gestores de contexto",
    "conversions": "las conversiones aritméticas",
    "customization": "la personalización básica de clases",
    "debugger": "el depurador pdb",
    "dict": "los literales de diccionario",
    "dynamic-features": "la interacción con exec y eval",
    "exceptions": "las excepciones",
    "execmodel": "el modelo de ejecución",
    "exprlists": "las listas de expresiones",
    "floating": "los literales de coma flotante",
    "formatstrings": "la sintaxis de format strings",
    "function": "la definición de funciones",
    "id-classes": "las clases reservadas de identificadores",
    "identifiers": "los identificadores y palabras clave",
    "imaginary": "los literales imaginarios",
    "in": "los operadores de pertenencia",
    "integers": "los literales enteros",
    "lambda": "las lambdas",
    "lists": "los literales de lista",
    "naming": "el enlace de nombres",
    "numbers": "los literales numéricos",
    "numeric-types": "la emulación de tipos numéricos",
    "objects": "los objetos, valores y tipos",
    "operator-summary": "la precedencia de operadores",
    "power": "el operador potencia",
    "sequence-types": "la emulación de contenedores",
    "shifting": "las operaciones de desplazamiento",
    "slicings": "el slicing",
    "specialattrs": "los atributos especiales",
    "specialnames": "los métodos especiales",
    "string-methods": "los métodos de str",
    "strings": "los literales de cadena y bytes",
    "subscriptions": "las suscripciones",
    "truth": "la evaluación del valor de verdad",
    "types": "la jerarquía estándar de tipos",
    "typesfunctions": "los objetos función",
    "typesmapping": "el tipo dict",
    "typesmethods": "los objetos método",
    "typesmodules": "los módulos",
    "typesseq": "los tipos secuencia (list, tuple, range)",
    "typesseq-mutable": "las secuencias mutables",
    "unary": "las operaciones unarias",
}
"""How a Spanish-speaking engineer names each topic; statements follow one rule instead."""


@dataclass(frozen=True)
class DemoChunk:
    chunk_id: str
    topic: str
    title: str
    section: str
    text: str

    @property
    def subject_en(self) -> str:
        """The topic as an English question names it: 'the with statement'."""
        quoted = set(re.findall(r'"([^"]+)"', self.title))
        words = self.title.replace('"', "").replace(" — ", ": ").split()
        return " ".join(
            w if w in quoted or w == "Python" or not w[1:].islower() else w.lower() for w in words
        )

    @property
    def subject_es(self) -> str:
        statement = _STATEMENT.match(self.title)
        return (
            f"la sentencia {statement.group(1)}"
            if statement
            else SPANISH_SUBJECTS.get(self.topic, self.subject_en)
        )


def _paragraphs(body: str) -> list[tuple[str, str]]:
    """(section, paragraph) pairs; a heading paragraph names the section of what follows."""
    section, out = "", []
    for block in re.split(r"\n\s*\n", body):
        lines = block.strip("\n").splitlines()
        if len(lines) == 2 and _UNDERLINE.match(lines[1].strip()):
            section = lines[0].strip()
        elif block.strip():
            out.append((section, block.strip("\n")))
    return out


def _chunks(topic: str, text: str) -> list[DemoChunk]:
    lines = text.strip("\n").splitlines()
    title, body = (
        lines[0].strip(),
        "\n".join(lines[2:] if len(lines) > 1 and _UNDERLINE.match(lines[1]) else lines[1:]),
    )
    groups: list[tuple[str, list[str]]] = []
    words = 0
    for section, paragraph in _paragraphs(body):
        size = len(paragraph.split())
        # A new group at a section change (once the current one says something) or when full.
        if (
            not groups
            or (section != groups[-1][0] and words >= MIN_WORDS // 2)
            or (words >= MIN_WORDS and words + size > MAX_WORDS)
        ):
            groups.append((section, []))
            words = 0
        groups[-1][1].append(paragraph)
        words += size
    chunks = []
    for ordinal, (section, paragraphs) in enumerate(groups):
        body_text = "\n\n".join(paragraphs)
        digest = hashlib.sha256(body_text.encode()).hexdigest()[:8]
        chunks.append(
            DemoChunk(
                f"pydoc/{topic}#{ordinal}-{digest}", topic, title, section or title, body_text
            )
        )
    return chunks


@functools.cache
def _load() -> tuple[DemoChunk, ...]:
    return tuple(
        chunk for topic in sorted(_PYDOC_TOPICS) for chunk in _chunks(topic, _PYDOC_TOPICS[topic])
    )


def load_demo_chunks() -> list[DemoChunk]:
    """Every chunk of the demo corpus, in topic order; identical on every call and machine."""
    return list(_load())
