"""The cases themselves: traces with their planted values, each recorded where it reads.

Each trace gets one to four values, each in one of the forms of `forms.FORMS`, planted in a sentence
of tests/data/pii_cases.yaml, in Spanish or English, in one of the places a trace carries text: the
question, the answer, a retrieved context, a tool argument, a metadata value, a metadata key, or
JSON-escaped text inside a metadata value. Each planted value is recorded with its expected type,
its form and the exact string as it reads in the trace, so recall is measured per type and per form.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pipelines.core.records import Context, ToolCall, Trace
from ragwatch_harness.bench.pii.forms import FORMS
from ragwatch_harness.bench.pii.phrases import ANSWERS, CONTEXT, QUESTIONS, TEMPLATES
from ragwatch_harness.bench.pii.values import Maker

PLACES = (
    "question",
    "answer",
    "context",
    "tool_argument",
    "metadata_value",
    "metadata_key",
    "json_escaped",
)
LANGUAGES = ("es", "en")


@dataclass(frozen=True)
class Planted:
    entity: str
    """The type the anonymizer should give it, e.g. PHONE, or IBAN_INVALID for a wrong check
    digit."""
    form: str
    """How it is written, e.g. "phone/es en dash" or "email/arroba punto"."""
    value: str
    """The exact string as it reads in the trace field (escaped, where the field is
    JSON-escaped)."""
    place: str
    language: str


@dataclass(frozen=True)
class PiiCase:
    trace: Trace
    planted: tuple[Planted, ...]


_KEY_PLACES_TEMPLATES = ("email", "phone", "ip", "id", "name", "iban", "card")


def _embed(
    place: str, sentence: str, snippet: str, value: str, lang: str, m: Maker, draft: dict
) -> str:
    """Put `sentence` in `place` of the draft; return the value as it reads there."""
    if place == "question":
        draft["question"] = f"{draft['question']} {sentence}"
    elif place == "answer":
        draft["answer"] = f"{sentence} {draft['answer']}"
    elif place == "context":
        draft["contexts"].append(
            Context(
                chunk_id=f"tickets/{m.rng.randint(10000, 99999)}#0",
                text=f"Ticket: {sentence}",
                score=0.4,
            )
        )
    elif place == "tool_argument":
        arguments = m.rng.choice(
            (
                {"query": sentence},
                {"filters": [{"note": sentence}], "top_k": 5},
                {"body": {"text": sentence}},
            )
        )
        draft["tool_calls"].append(
            ToolCall(
                name=m.rng.choice(("web_search", "sql_query", "http_request")), arguments=arguments
            )
        )
    elif place == "metadata_value":
        draft["metadata"][f"note_{len(draft['metadata'])}"] = sentence
    elif place == "metadata_key":
        draft["metadata"][snippet] = {"seen": m.rng.randint(1, 9)}
    else:  # json_escaped: a payload serialized twice, as loggers do
        escaped = json.dumps({"message": sentence}, ensure_ascii=True)
        draft["metadata"][f"raw_{len(draft['metadata'])}"] = escaped
        return json.dumps(value, ensure_ascii=True)[1:-1]
    return value


def _one_case(rng: random.Random, index: int, start: datetime) -> PiiCase:
    lang = rng.choice(LANGUAGES)
    m = Maker(rng)
    draft = {
        "question": rng.choice(QUESTIONS[lang]),
        "answer": ANSWERS[lang],
        "tool_calls": [],
        "metadata": {"channel": "web"},
        "contexts": [Context(chunk_id="pydoc/with#0", text=CONTEXT, score=0.9)],
    }
    planted = []
    for _ in range(rng.choice((1, 2, 3, 4))):
        form = rng.choice(list(FORMS))
        value = FORMS[form](m)
        places = [
            p
            for p in PLACES
            if p != "metadata_key" or (value.short and value.templates in _KEY_PLACES_TEMPLATES)
        ]
        place = rng.choice(places)
        sentence = (
            value.snippet
            if place == "metadata_key"
            else rng.choice(TEMPLATES[value.templates][lang]).format(v=value.snippet)
        )
        as_written = _embed(place, sentence, value.snippet, value.value, lang, m, draft)
        planted.append(Planted(value.entity, form, as_written, place, lang))
    trace = Trace(
        trace_id=f"pii-{uuid.UUID(int=rng.getrandbits(128), version=4)}",
        ts=start + timedelta(seconds=index),
        model="qwen2.5-7b-instruct",
        app="support-bot",
        language=lang,
        user_feedback=None,
        latency_ms=rng.randint(200, 3000),
        **draft,
    )
    return PiiCase(trace, tuple(planted))


def generate_pii_cases(n: int, *, seed: int) -> list[PiiCase]:
    """`n` traces with one to four planted values each; the same seed, the same cases."""
    rng = random.Random(seed)
    start = datetime(2026, 11, 28, tzinfo=UTC)
    return [_one_case(rng, i, start) for i in range(n)]
