"""The deterministic offline backend's own knowledge: its model name, how it picks a tool, and its
faults.

Every record the offline backend produces names `OFFLINE_MODEL`, so its output can never pass for a
real model's. Prompts carry their own offline answers (`Prompt.offline`); a tool-calling chat has no
prompt object, so the offline choice of a tool lives here, shared by `OfflineLLM` and the simulator.

A perfect copier would make every metric read 1.0 and no regression visible, so the offline
generator can behave like a flawed model at configured rates (`OfflineFaults`, variables
`RAGWATCH_OFFLINE_FAULTS__<NAME>`; all 0 by default). Each fault is drawn from a hash of the content
it applies to (the question, the sample number, the sentence's position), never from a clock or a
global random state: the same request always gets the same answer, and raising a rate only adds
faults to the items that had them at the lower rate (a paired comparison sees the change, not
reshuffled noise). The faults are process-wide, like a model's weights: every prompt this process
answers offline and every tool it picks uses them, and reports name them next to the model
(`offline_model_label`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from functools import lru_cache

from pydantic import Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from pipelines.core.agent_tools import requested_term, tool_arguments
from pipelines.core.language import template_language
from pipelines.core.records import ToolCall
from pipelines.core.text import (
    content_tokens,
    fold_word,
    missing_facts,
    named_entities,
    numbers,
    sentences,
    words,
)
from pipelines.models.prompts import user_texts

OFFLINE_MODEL = "ragwatch-offline-deterministic"

COUNTING = (
    "how many",
    "count",
    "total",
    "average",
    "cuántos",
    "cuántas",
    "cuantos",
    "número de",
    "media de",
)
EXTERNAL = (
    "latest",
    "news",
    "today",
    "current price",
    "noticias",
    "últimas",
    "hoy",
    "precio actual",
)
FAULTS_ENV_PREFIX = "RAGWATCH_OFFLINE_FAULTS__"


class OfflineFaults(BaseSettings):
    """How often the offline generator errs, each a probability in [0, 1]."""

    model_config = SettingsConfigDict(env_prefix=FAULTS_ENV_PREFIX, extra="ignore", frozen=True)

    made_up: float = Field(default=0.0, ge=0.0, le=1.0)
    """Share of answer sentences replaced by an invented one (a topical claim with a version number
    and a name that no context holds)."""
    swapped: float = Field(default=0.0, ge=0.0, le=1.0)
    """Share of answer sentences kept but with one number or named entity swapped for another."""
    wrong_abstention: float = Field(default=0.0, ge=0.0, le=1.0)
    """Share of answers that say "not enough information" although the contexts were used to
    answer."""
    wrong_context: float = Field(default=0.0, ge=0.0, le=1.0)
    """Share of answers built from the least relevant context given instead of the best (needs ≥
    2)."""
    wrong_tool: float = Field(default=0.0, ge=0.0, le=1.0)
    """Share of tool turns that call another tool than the keyword rules choose."""
    wrong_arguments: float = Field(default=0.0, ge=0.0, le=1.0)
    """Share of tool turns that pass the user's request verbatim as the tool's query instead of the
    arguments the request asks for (drawn apart from `wrong_tool`: a turn can have both)."""
    noise_susceptibility: float = Field(default=0.0, ge=0.0, le=1.0)
    """Share of answers that also copy a sentence from the least relevant context given (an injected
    irrelevant chunk, when there is one), as a model distracted by noise does (needs ≥ 2
    contexts)."""

    @model_validator(mode="after")
    def _one_fault_per_sentence(self) -> OfflineFaults:
        if self.made_up + self.swapped > 1.0 + 1e-9:
            raise ValueError("made_up + swapped is a share of sentences: at most 1")
        return self

    @property
    def unsupported_sentence_rate(self) -> float:
        """Expected share of answer sentences no context supports: the planted 1 − faithfulness."""
        return self.made_up + self.swapped

    def active(self) -> dict[str, float]:
        return {name: value for name, value in self.model_dump().items() if value}

    def label(self) -> str:
        """`made_up=0.1, wrong_tool=0.2`, or `none`."""
        return ", ".join(f"{name}={value:g}" for name, value in self.active().items()) or "none"


def configured_faults() -> OfflineFaults:
    """The fault rates of this process, from `RAGWATCH_OFFLINE_FAULTS__*` (a ValueError naming the
    variable when one is invalid)."""
    snapshot = tuple(
        sorted((k, v) for k, v in os.environ.items() if k.upper().startswith(FAULTS_ENV_PREFIX))
    )
    return _faults_from(snapshot)


@lru_cache(maxsize=32)
def _faults_from(
    snapshot: tuple[tuple[str, str], ...],
) -> OfflineFaults:  # the snapshot is the cache key
    try:
        return OfflineFaults()
    except ValidationError as exc:
        problems = "; ".join(
            f"{FAULTS_ENV_PREFIX}{'__'.join(map(str, e['loc'])).upper() or '*'}: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
        raise ValueError(problems) from None


def offline_model_label(faults: OfflineFaults | None = None) -> str:
    """The offline model's name as reports show it: with its fault rates when any is set."""
    faults = configured_faults() if faults is None else faults
    return f"{OFFLINE_MODEL} (faults: {faults.label()})" if faults.active() else OFFLINE_MODEL


def draw(*parts: object) -> float:
    """A number in [0, 1) determined by `parts` alone."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _pick(options: list | tuple, *parts: object):
    return options[int(draw("pick", *parts) * len(options))]


# --- answers --------------------------------------------------------------------------------------

INVENTED_NAMES = (
    "Halvorsen",
    "Okonkwo",
    "Marquetti",
    "Valdivia",
    "Lindqvist",
    "Abernathy",
    "Szymanski",
    "Ferrante",
    "Oyelaran",
    "Kowalczyk",
    "Estrella",
    "Brannigan",
)
"""Names that no Python or operations document mentions: a claim carrying one is invented."""
INVENTED = {
    "en": (
        "{Topic} was redesigned in version {a}.{b} after a proposal by the {Name} working group.",
        "Since release {a}.{b}, {topic} is limited to {n} nested levels by the {Name} runtime.",
        "The {Name} committee deprecated {topic} in {year} and recommends the {Other} module instead.",
    ),
    "es": (
        "{Topic} se rediseñó en la versión {a}.{b} tras una propuesta del grupo de trabajo {Name}.",
        "Desde la versión {a}.{b}, {topic} admite como máximo {n} niveles anidados en el entorno {Name}.",
        "El comité {Name} declaró obsoleto {topic} en {year} y recomienda el módulo {Other}.",
    ),
}
TOPIC_FALLBACK = {"en": "this feature", "es": "esta función"}
SINCE_VERSION = {"en": "since version", "es": "desde la versión"}


def invented_sentence(topic_text: str, language: str, evidence: str, *seed: object) -> str:
    """A fluent, topical sentence whose numbers and names appear nowhere in `evidence`."""
    lang = template_language(language, INVENTED)
    terms = sorted(set(content_tokens(topic_text)), key=lambda t: (-len(t), t))
    topic = _pick(terms[:3], "topic", *seed) if terms else TOPIC_FALLBACK[lang]
    known_numbers, known_words = set(numbers(evidence)), {fold_word(w) for w in words(evidence)}
    for attempt in range(20):
        name = _pick(INVENTED_NAMES, "name", attempt, *seed)
        other = _pick(INVENTED_NAMES, "other", attempt, *seed)
        values = {
            "a": 4 + int(draw("a", attempt, *seed) * 6),
            "b": 10 + int(draw("b", attempt, *seed) * 80),
            "n": 3 + int(draw("n", attempt, *seed) * 60),
            "year": 2031 + int(draw("y", attempt, *seed) * 9),
        }
        text = _pick(INVENTED[lang], "template", *seed).format(
            Topic=topic[:1].upper() + topic[1:], topic=topic, Name=name, Other=other, **values
        )
        if (
            other != name
            and not set(numbers(text)) & known_numbers
            and fold_word(name) not in known_words
            and fold_word(other) not in known_words
        ):
            return text
    return text


def swap_fact(sentence: str, evidence: str, language: str, *seed: object) -> str:
    """The sentence with one number (else one named entity) replaced by one the evidence lacks; a
    sentence with neither gets a version it never stated. Every candidate is checked with the
    offline judge's own rule (`missing_facts`): a swap the judge could not see would plant a fault
    no metric can recover."""
    for candidate in _swaps(sentence, evidence, *seed):
        if missing_facts(candidate, evidence):
            return candidate
    known_numbers = set(numbers(evidence))
    since = SINCE_VERSION[template_language(language, SINCE_VERSION)]
    for attempt in range(40):
        version = (
            f"{4 + int(draw('a', attempt, *seed) * 6)}.{10 + int(draw('b', attempt, *seed) * 80)}"
        )
        if version not in known_numbers:
            break
    return f"{sentence.rstrip().rstrip('.!?')} ({since} {version})."


def _swaps(sentence: str, evidence: str, *seed: object) -> Iterator[str]:
    known_numbers, known_words = set(numbers(evidence)), {fold_word(w) for w in words(evidence)}
    found = numbers(sentence)
    if found:
        target = _pick(found, "number", *seed)
        for step in range(1, 40):
            replacement = _shift_number(target, step + int(draw("shift", *seed) * 7))
            if replacement not in known_numbers and replacement not in found:
                pattern = re.compile(rf"(?<![\w.,]){re.escape(target)}(?![\w])")
                yield pattern.sub(replacement, sentence, count=1)
                break
    for target in named_entities(sentence):
        for attempt in range(len(INVENTED_NAMES)):
            name = _pick(INVENTED_NAMES, "swap", attempt, *seed)
            if fold_word(name) not in known_words:
                # Every occurrence: the one the entity rule saw may not be the first.
                yield re.sub(rf"\b{re.escape(target)}\b", name, sentence)
                break


def _shift_number(number: str, step: int) -> str:
    """`6333` -> `6333 + step`; `3.11` -> `3.(11 + step)`: the last group of digits moves."""
    head, last = re.fullmatch(r"(.*?)(\d+)", number).groups()
    return f"{head}{int(last) + step}"


def corrupt_sentences(
    parts: list[str],
    faults: OfflineFaults,
    *,
    topic: str,
    language: str,
    evidence: str,
    seed: tuple,
) -> list[str]:
    """Each sentence, independently: invented with probability `made_up`, a fact swapped with
    probability `swapped`, else kept."""
    out = []
    for position, sentence in enumerate(parts):
        u = draw("sentence", position, *seed)
        if u < faults.made_up:
            out.append(invented_sentence(topic, language, evidence, position, *seed))
        elif u < faults.made_up + faults.swapped:
            out.append(swap_fact(sentence, evidence, language, position, *seed))
        else:
            out.append(sentence)
    return out


def join_sentences(parts: list[str]) -> str:
    """One paragraph when the sentences read back as the same sentences, else one sentence per
    paragraph (a claim extractor splitting the answer must find exactly these)."""
    text = " ".join(parts)
    return text if sentences(text) == parts else "\n\n".join(parts)


# --- tools ----------------------------------------------------------------------------------------


def choose_tool(
    messages: list[dict], tools: list[dict], faults: OfflineFaults | None = None
) -> list[ToolCall]:
    """Keyword rules over the last user message: counting questions query SQL, news goes to the web,
    everything else searches the documentation. With `wrong_tool` faults (default: the configured
    ones) a share of the questions, drawn from their text, call another of the offered tools. The
    call's arguments come from `_arguments`."""
    question = next(user_texts(messages), "")
    names = [tool["function"]["name"] for tool in tools]
    lowered = question.lower()
    if any(k in lowered for k in COUNTING) and "sql_query" in names:
        chosen = "sql_query"
    elif any(k in lowered for k in EXTERNAL) and "web_search" in names:
        chosen = "web_search"
    elif "vector_search" in names:
        chosen = "vector_search"
    else:
        return []
    faults = configured_faults() if faults is None else faults
    others = [n for n in names if n != chosen]
    if others and draw("wrong_tool", question) < faults.wrong_tool:
        chosen = _pick(others, "other_tool", question)
    return [ToolCall(name=chosen, arguments=_arguments(chosen, question, faults))]


def _arguments(name: str, question: str, faults: OfflineFaults) -> dict:
    """A request of the golden generator's (`agent_tools.TOOL_REQUESTS`) gets the arguments its
    right call takes (`tool_arguments`, what its golden triple expects), except in a
    `wrong_arguments` share of turns; those, and any other request, pass the question verbatim (SQL:
    as a comment over a bare count)."""
    term = requested_term(question)
    right = tool_arguments(name, term) if term is not None else None
    if right is not None and draw("wrong_arguments", question) >= faults.wrong_arguments:
        return right
    if name == "sql_query":
        return {"query": f"-- {question}\nSELECT count(*) FROM tickets"}
    if name == "vector_search":
        return {"query": question, "top_k": 5}
    return {"query": question}
