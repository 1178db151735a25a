"""A generated corpus of any size for the indexing benchmark: bilingual prose, HTML and Markdown.

English paragraphs recombine real sentences of Python's language reference (`pydoc_data`, on every
machine); Spanish paragraphs recombine the demo's Spanish guides with operating-wiki sentences
filled with services, numbers and commands. Every section holds 120-280 words, so the chunker makes
one chunk per section and the corpus has the number of chunks asked for. Same seed, same files.

`golden_rows` writes hand-written-style golden items whose gold passages come from the corpus:
most verbatim (containment), some reordered (coverage), some from no document at all (misses).
"""

from __future__ import annotations

import functools
import random
import re
from datetime import date, timedelta
from html import escape
from pathlib import Path
from pydoc_data.topics import topics

from pipelines.core.text import sentences
from ragwatch_harness.demo.guides_es import GUIDES_ES

SECTION_WORDS = (120, 280)
SECTIONS_PER_DOCUMENT = (4, 8)

_SERVICES = (
    "el indexador",
    "la API de búsqueda",
    "el generador",
    "el juez",
    "la cola de ingesta",
    "el balanceador",
    "el servicio de facturación",
    "la réplica de Qdrant",
    "el planificador",
    "el servidor vLLM",
)
_ACTIONS = (
    "reinicia sus réplicas",
    "vacía la caché",
    "rota las credenciales",
    "reduce el tamaño del lote",
    "pasa a modo de solo lectura",
    "avisa a la persona de guardia",
    "escala a dos nodos más",
)
_COMMANDS = (
    "ragwatch corpus index",
    "kubectl rollout restart",
    "helm upgrade --atomic",
    "dvc push",
    "airflow dags trigger",
    "systemctl restart qdrant",
)
_TEMPLATES_ES = (
    "Cuando la latencia de {svc} supera los {n} milisegundos durante {m} minutos, el sistema {act}.",
    "La persona de guardia revisa {svc} cada {m} minutos y anota las incidencias en el canal del equipo.",
    "Para recuperar {svc} después de un corte, ejecuta `{cmd}` y espera unos {m} minutos antes de comprobarlo.",
    "El límite diario de {svc} es de {n} peticiones por cliente; al superarlo, {act}.",
    "Si la cola acumula más de {n} mensajes, {svc} {act} sin intervención manual.",
    "Las copias de seguridad de {svc} se guardan durante {m} días en el almacenamiento compartido.",
    "Antes de cambiar la configuración de {svc}, abre una petición de cambio y enlaza el último informe.",
    "En la versión {m}.{k}, {svc} registra cada reinicio con su motivo y la duración del corte.",
    "El coste mensual de {svc} ronda los {n} euros, y la mitad corresponde a las horas de GPU.",
    "Nunca ejecutes `{cmd}` en producción sin avisar antes a la persona de guardia de la plataforma.",
)
_TITLES_EN = (
    "Operating notes",
    "Reference",
    "Behaviour",
    "Details",
    "Examples",
    "Limits",
    "Semantics",
)
_TITLES_ES = (
    "Operación",
    "Configuración",
    "Límites",
    "Incidencias",
    "Recuperación",
    "Costes",
    "Preguntas frecuentes",
)


@functools.cache
def _english_sentences() -> tuple[str, ...]:
    prose = re.compile(r"[{}()\[\]=<>|\\]|\.\.\.|\*\*")
    return tuple(
        s
        for text in topics.values()
        for s in sentences(text)
        if 8 <= len(s.split()) <= 40 and not prose.search(s)
    )


@functools.cache
def _spanish_sentences() -> tuple[str, ...]:
    body = "\n\n".join(text.split("\n---\n", 1)[-1] for text in GUIDES_ES.values())
    return tuple(
        s
        for s in sentences(body)
        if 8 <= len(s.split()) <= 40 and not s.startswith(("#", "-", "|", "`"))
    )


def _sentence(rng: random.Random, language: str) -> str:
    if language == "en":
        return rng.choice(_english_sentences())
    if rng.random() < 0.3:
        return rng.choice(_spanish_sentences())
    sentence = rng.choice(_TEMPLATES_ES).format(
        svc=rng.choice(_SERVICES),
        act=rng.choice(_ACTIONS),
        cmd=rng.choice(_COMMANDS),
        n=rng.randrange(50, 20_000),
        m=rng.randrange(2, 90),
        k=rng.randrange(0, 9),
    )
    return sentence.replace(" de el ", " del ").replace("Para recuperar el", "Para recuperar al")


def _section(rng: random.Random, language: str) -> list[str]:
    """Paragraphs of 2-6 sentences adding up to SECTION_WORDS words."""
    target = rng.randint(*SECTION_WORDS)
    paragraphs: list[list[str]] = [[]]
    words = 0
    while True:
        sentence = _sentence(rng, language)
        size = len(sentence.split())
        if words + size > SECTION_WORDS[1]:
            break
        if len(paragraphs[-1]) >= rng.randint(2, 6):
            paragraphs.append([])
        paragraphs[-1].append(sentence)
        words += size
        if words >= target:
            break
    return [" ".join(p) for p in paragraphs if p]


def _markdown(title: str, day: date, language: str, sections: list[tuple[str, list[str]]]) -> str:
    parts = [f"---\ntitle: {title}\ndate: {day.isoformat()}\nlang: {language}\n---\n\n# {title}\n"]
    for heading, paragraphs in sections:
        parts.append(f"## {heading}\n\n" + "\n\n".join(paragraphs) + "\n")
    return "\n".join(parts)


def _html(title: str, day: date, language: str, sections: list[tuple[str, list[str]]]) -> str:
    body = [f"<h1>{escape(title)}</h1>"]
    for heading, paragraphs in sections:
        body.append(f"<h2>{escape(heading)}</h2>")
        body += [f"<p>{escape(p)}</p>" for p in paragraphs]
    return (
        f'<!DOCTYPE html>\n<html lang="{language}"><head><title>{escape(title)}</title>'
        f'<meta name="date" content="{day.isoformat()}"><style>p {{ margin: 0 }}</style></head>\n'
        f"<body><nav>Inicio · Home</nav><main>\n" + "\n".join(body) + "\n</main></body></html>\n"
    )


def write_synthetic_corpus(folder: Path, chunks: int, seed: int = 11) -> list[Path]:
    """Markdown and HTML files under `folder` holding `chunks` sections (one chunk each)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    left, number = chunks, 0
    while left > 0:
        language = "es" if number % 2 else "en"
        count = min(left, rng.randint(*SECTIONS_PER_DOCUMENT))
        titles = _TITLES_ES if language == "es" else _TITLES_EN
        sections = [
            (f"{rng.choice(titles)} {i + 1}", _section(rng, language)) for i in range(count)
        ]
        title = f"{'Guía' if language == 'es' else 'Guide'} {number:05d}"
        day = date(2024, 1, 1) + timedelta(days=rng.randrange(700))
        html = rng.random() < 0.5
        path = (
            folder
            / language
            / f"{number // 500:03d}"
            / f"doc-{number:05d}.{'html' if html else 'md'}"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            (_html if html else _markdown)(title, day, language, sections), encoding="utf-8"
        )
        written.append(path)
        left -= count
        number += 1
    return written


def chunk_texts(count: int, seed: int = 11) -> list[str]:
    """`count` chunk-sized passages as the corpus's sections read once parsed, English and Spanish
    in turn."""
    rng = random.Random(seed)
    return ["\n\n".join(_section(rng, "es" if number % 2 else "en")) for number in range(count)]


def golden_rows(chunk_texts: list[str], items: int, seed: int = 11) -> list[dict[str, str]]:
    """Rows for `golden import`: 80 % verbatim passages, 12 % reordered, 8 % from no document."""
    rng = random.Random(seed)
    rows = []
    for number in range(items):
        text = rng.choice(chunk_texts)
        spanish = "¿" in text or " el " in text
        picked = [s for s in sentences(text) if len(s.split()) >= 6] or [text]
        passage = rng.choice(picked)
        draw = rng.random()
        if draw >= 0.92:
            passage = f"zafiro {number} ámbar {number * 7} pasaje que no está en ningún documento"
        elif draw >= 0.8:
            words = passage.split()
            rng.shuffle(words)
            passage = " ".join(words)
        question = (
            f"¿Qué dice la guía sobre esto (caso {number})?"
            if spanish
            else f"What does the guide say about this (case {number})?"
        )
        rows.append(
            {
                "question": question,
                "reference_answer": passage,
                "gold_passages": passage,
                "split": "",
            }
        )
    return rows
