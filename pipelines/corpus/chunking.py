"""Documents -> chunks with ids that survive re-indexing.

A chunk id is `<document>#<section slug>/<ordinal>-<sha256(text)[:8]>`. Ordinals count within
a section, so editing one section leaves the ids of every other section alone, and the hash
makes an edited chunk a new id instead of an old id pointing at new text (which would silently
corrupt golden items that cite it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

from pipelines.core.language import detect_language
from pipelines.core.records import Chunk, content_hash
from pipelines.core.text import fold
from pipelines.corpus.documents import Document, iter_documents

MAX_WORDS = 300
"""Upper bound per chunk; sections are split into near-equal chunks under it (~200-300 words)."""

_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+")


def slugify(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", fold(title)).strip("-")[:60].rstrip("-") or "section"


def load_chunks(folder: Path, max_words: int = MAX_WORDS) -> list[Chunk]:
    """Every chunk of every Markdown, HTML and text file under `folder`, in document order."""
    return [
        chunk
        for document in iter_documents(folder)
        for chunk in chunk_document(document, max_words)
    ]


def chunk_document(document: Document, max_words: int = MAX_WORDS) -> list[Chunk]:
    if max_words < 20:
        raise ValueError(f"max_words={max_words} is too small to hold a paragraph; use 200-350")
    whole = " ".join(p for section in document.sections for p in section.paragraphs)
    doc_language = document.language or detect_language(whole)
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    for section in document.sections:
        slug = slugify(section.title)
        seen[slug] = seen.get(slug, 0) + 1
        if seen[slug] > 1:  # two "Examples" sections in one document must not share ids
            slug = f"{slug}-{seen[slug]}"
        for ordinal, text in enumerate(pack(section.paragraphs, max_words)):
            digest = content_hash(text)
            chunks.append(
                Chunk(
                    chunk_id=f"{document.path}#{slug}/{ordinal}-{digest[:8]}",
                    document=document.path,
                    section=section.title,
                    ordinal=ordinal,
                    type=document.type,
                    date=document.date,
                    language=document.language
                    or detect_language(f"{section.title}\n{text}", default=doc_language),
                    text=text,
                    content_hash=digest,
                )
            )
    return chunks


def pack(paragraphs: Sequence[str], max_words: int) -> list[str]:
    """Paragraphs grouped into chunks of at most `max_words`, balanced in size.

    Splitting 400 words into 200 + 200 instead of 300 + 100 keeps the tail chunk meaningful.
    Only a paragraph longer than `max_words` is cut, at line, then sentence, then word breaks.
    """
    pieces = [piece for paragraph in paragraphs for piece in _fit(paragraph, max_words)]
    sizes = [_words(piece) for piece in pieces]
    total = sum(sizes)
    if not total:
        return []
    target = total / math.ceil(total / max_words)
    chunks: list[list[str]] = []
    words = 0
    for piece, size in zip(pieces, sizes, strict=True):
        if not chunks or words + size > max_words or words >= target:
            chunks.append([])
            words = 0
        chunks[-1].append(piece)
        words += size
    return ["\n\n".join(chunk) for chunk in chunks]


def _words(text: str) -> int:
    return len(text.split())


def _fit(paragraph: str, max_words: int) -> list[str]:
    if _words(paragraph) <= max_words:
        return [paragraph]
    by_line = ("\n", str.splitlines)
    by_sentence = (" ", _SENTENCE_END.split)
    # Code keeps its lines; prose wrapped at 72 columns is better cut at a sentence end.
    for separator, splitter in (
        (by_line, by_sentence) if _looks_like_code(paragraph) else (by_sentence, by_line)
    ):
        units = [unit for unit in splitter(paragraph) if unit.strip()]
        if len(units) > 1:
            return _greedy(
                [piece for unit in units for piece in _fit(unit, max_words)], max_words, separator
            )
    words = paragraph.split()
    return [" ".join(words[i : i + max_words]) for i in range(0, len(words), max_words)]


def _looks_like_code(paragraph: str) -> bool:
    lines = [line for line in paragraph.splitlines() if line.strip()]
    return paragraph.lstrip().startswith(("```", "~~~")) or all(
        line[:1].isspace() for line in lines
    )


def _greedy(units: list[str], max_words: int, separator: str) -> list[str]:
    out: list[list[str]] = []
    words = 0
    for unit in units:
        size = _words(unit)
        if not out or words + size > max_words:
            out.append([])
            words = 0
        out[-1].append(unit)
        words += size
    return [separator.join(group) for group in out]
