"""The passages the demo's users ask about, and the reviewed questions a team imports for them.

Engineers ask the demo assistant about a few passages of the language reference, each question
quoting the sentence they read (in English, whatever language they write in). A team that runs
ragwatch imports reviewed questions like its users' with the passage that answers each
(`ragwatch golden import`): the demo imports one English and one Spanish question per passage, in
the traffic's own templates. These are the golden set's user questions, on which coverage learns
its threshold and the matcher's error rates; their passages are golden passages, so every question
about them is covered. Only the packaging questions the demo plants are not (traces.NEW_TOPIC): the
designed coverage of a day is the share of its traffic that asks about these passages.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from pipelines.core.user_question import DOCUMENT_PROBE_CHARS
from ragwatch_harness.demo.corpus import DemoChunk, load_demo_chunks

ASKED_TOPICS = (
    "typesseq",
    "slicings",
    "typesfunctions",
    "yield",
    "lists",
    "execmodel",
    "debugger",
    "import",
    "compound",
    "shifting",
    "subscriptions",
    "assert",
    "dict",
    "numbers",
    "attribute-references",
    "objects",
    "operator-summary",
    "specialnames",
    "formatstrings",
    "atom-identifiers",
)
"""The topics whose first passage the demo's users ask about: the 20 whose quoted sentence stands
out most from every other topic's text (by character n-grams). Several topics of the reference
repeat each other's sentences (`with` and `context-managers`, `if` and `else`): a quote from those
names no one passage."""
QUOTE_WORDS = 12
"""A quote is the first sentence of at least this many words, cut to its words that fit in
QUOTE_CHARS."""
QUOTE_CHARS = DOCUMENT_PROBE_CHARS - 1
"""Shorter than the opening of a retrieved passage that marks a question as a prompt
(pipelines/core/user_question.py): a user's quote is not a template's block of contexts."""
QUOTED = {
    "es": ' La documentación dice: "{q}…"',
    "mixed": ' El reference dice: "{q}…"',
    "en": ' The docs say: "{q}…"',
}
"""How a question quotes the sentence its user read, after the question itself."""
_PLAIN = re.compile(r"^[A-Za-z][A-Za-z ,;'()-]+$")
"""Quotable: prose without markup, so the quote is found verbatim in the indexed passage."""


@dataclass(frozen=True)
class AskedPassage:
    chunk: DemoChunk
    quote: str
    """The passage's first plain sentence, or its first words: what its users quote."""


@functools.cache
def asked_passages() -> tuple[AskedPassage, ...]:
    """The passages of the demo's traffic, the same on every call and machine."""
    firsts: dict[str, DemoChunk] = {}
    for chunk in load_demo_chunks():
        firsts.setdefault(chunk.topic, chunk)
    return tuple(AskedPassage(firsts[t], _quote(firsts[t])) for t in ASKED_TOPICS)


def _quote(chunk: DemoChunk) -> str:
    for sentence in re.split(r"(?<=[.!?])\s+", " ".join(chunk.text.split())):
        words = sentence.rstrip(".").split()
        while len(" ".join(words)) > QUOTE_CHARS:
            words.pop()
        if len(words) >= QUOTE_WORDS and _PLAIN.match(" ".join(words)):
            return " ".join(words)
    raise ValueError(f"{chunk.chunk_id} has no sentence to quote")


def quoted_question(question: str, passage: AskedPassage, style: str) -> str:
    """A question of the traffic's templates (`style`: en, es or mixed), quoting its passage."""
    return question.rstrip() + QUOTED[style].format(q=passage.quote)


def reviewed_rows() -> list[dict]:
    """One English and one Spanish question per asked passage, in the traffic's templates, each
    with its passage (matched to the indexed chunk by `ragwatch golden import`); in the dev split,
    so the offline eval's test items stay the generated ones."""
    from ragwatch_harness.demo.traces import QUESTIONS

    rows = []
    for k, passage in enumerate(asked_passages()):
        chunk = passage.chunk
        plural = "n" if chunk.subject_es.startswith(("los ", "las ")) else ""
        for language, style in (("en", "en"), ("es", "mixed" if k % 3 == 0 else "es")):
            templates = QUESTIONS[style]
            template = templates[(k * 5 + len(language)) % len(templates)]
            question = template.format(s=chunk.subject_es, e=chunk.subject_en, n=plural)
            rows.append(
                {
                    "question": quoted_question(question, passage, style),
                    "reference_answer": passage.quote + ".",
                    "gold_passages": [passage.quote],
                    "language": language,
                    "split": "dev",
                }
            )
    return rows


def write_reviewed(path: Path) -> Path:
    """The reviewed questions as a JSONL file `ragwatch golden import` reads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in reviewed_rows()),
        encoding="utf-8",
    )
    return path
