"""The user's question, never the prompt an app built around it.

In a RAG app the user message sent to the model is a template: "Context: <the retrieved chunks>
Question: <the user's words>", or a JSON payload with the contexts inside. Taken for the question,
it makes every question-level metric judge the prompt (answer relevancy against 1,500 characters of
retrieved text), and the language, strata and coverage follow it. So a candidate that holds a
retrieved document's text or a template's context block is never the question: the next candidate is
tried, and a trace with nothing but prompts is quarantined as `question_is_prompt`, with what to set
to fix it.

A team whose template is known may name the span attribute that holds the user's words
(`RAGWATCH_QUESTION_ATTRIBUTE`) or a regular expression whose group `question` extracts them from
the prompt (`RAGWATCH_QUESTION_PATTERN`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

QUESTION_IS_PROMPT = "question_is_prompt"
FIX = (
    "record the user's words as gen_ai.retrieval.query.text on the retrieval span (or input.value on the root "
    "span), or set RAGWATCH_QUESTION_ATTRIBUTE to the attribute that holds them, or RAGWATCH_QUESTION_PATTERN to a "
    "regex whose group 'question' extracts them from the prompt"
)

_CONTEXT_WORDS = (
    r"contexts?|context[oe]s?|kontext|documents?|documentos?|documentation|sources|fuentes|fonts|passages?|pasajes?"
    r"|fragmentos?|excerpts?|retrieved[ _]\w+|references?|referencias?"
)
_QUESTION_WORDS = (
    r"(?:user(?:'s)?\s+)?question|pregunta|pergunta|frage|qüestió|query|consulta|domanda"
)
CONTEXT_HEADING = re.compile(
    rf"^[ \t#*>-]*(?:{_CONTEXT_WORDS})\**[ \t]*:", re.IGNORECASE | re.MULTILINE
)
"""A line that opens a template's block of retrieved text: 'Context:', '## Contexto:',
'**Sources**:'."""
QUESTION_HEADING = re.compile(
    rf"^[ \t#*>-]*(?:{_QUESTION_WORDS})\**[ \t]*:", re.IGNORECASE | re.MULTILINE
)
CONTEXT_CONTAINER = re.compile(
    rf"<\s*(?:{_CONTEXT_WORDS})\b[^>]*>|\"(?:{_CONTEXT_WORDS})\"\s*:\s*[\[{{\"]", re.IGNORECASE
)
"""A block no one types in a question: an XML-like `<context>` element, or a JSON payload's
"contexts": [...]."""
TEMPLATE_PHRASE = re.compile(
    r"context information is below|use the following (?:pieces of )?(?:retrieved )?context"
    r"|given the (?:following )?(?:context|information)|(?:based on|using) (?:only )?the (?:following|above) context"
    r"|(?:usa|utiliza|con base en|bas[aá]ndote en) (?:el|los) (?:siguientes? )?contextos?",
    re.IGNORECASE,
)
"""The opening of the common RAG templates (LlamaIndex's text QA, LangChain's RAG prompt,
Haystack's, their Spanish versions), whose block of contexts has no 'Context:' heading."""
HEADING_ALONE_CHARS = 400
"""A 'Context:' heading or a template's phrase without a question heading still marks a prompt when
this much text follows it; with less, it may be a user's own 'Context: I run X. How do I...?'."""
DOCUMENT_PROBE_CHARS = 120
DOCUMENT_MIN_CHARS = 30
"""A retrieved document found in a candidate: its first DOCUMENT_PROBE_CHARS characters, whitespace
folded, when the document has at least DOCUMENT_MIN_CHARS (a shorter one may be words the user
typed)."""


@dataclass(frozen=True)
class QuestionRule:
    """Where a team's own template keeps the user's words; both unset by default."""

    attribute: str | None = None
    """A span attribute that holds the question, read before any other (e.g.
    `app.user_question`)."""
    pattern: re.Pattern[str] | None = None
    """Extracts the question from a candidate it matches: its group `question`, else its first
    group."""

    @classmethod
    def of(cls, attribute: str | None, pattern: str | None) -> QuestionRule:
        return cls(attribute or None, re.compile(pattern, re.DOTALL) if pattern else None)

    def extract(self, text: str) -> str | None:
        match = self.pattern.search(text) if self.pattern else None
        if match is None:
            return None
        found = match.group("question") if "question" in match.re.groupindex else match.group(1)
        return found.strip() if found else None


@dataclass(frozen=True)
class Chosen:
    question: str | None
    """The user's question; None when no candidate is one."""
    rejection: tuple[str, str, str] | None = None
    """(question_is_prompt, field, detail) when the only candidates were prompts."""


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def prompt_evidence(text: str, documents: Sequence[str] = ()) -> str | None:
    """Why `text` is a prompt rather than a question (what it holds), or None when it may be the
    user's words."""
    if CONTEXT_CONTAINER.search(text):
        return "a block of retrieved contexts"
    for marker in (CONTEXT_HEADING, TEMPLATE_PHRASE):
        found = marker.search(text)
        if found and (
            QUESTION_HEADING.search(text) or len(text) - found.end() >= HEADING_ALONE_CHARS
        ):
            return f"a {found.group(0).strip(' #*>-')!r} block"
    if documents:
        folded = _folded(text)
        for document in documents:
            probe = _folded(document)[:DOCUMENT_PROBE_CHARS]
            if len(probe) >= DOCUMENT_MIN_CHARS and probe in folded:
                return "a retrieved document's text"
    return None


def choose_question(
    candidates: Iterable[tuple[str, str | None]], documents: Sequence[str], rule: QuestionRule
) -> Chosen:
    """The first candidate, in the order given as (where, text), that is the user's words; a prompt
    the rule's pattern matches gives the words it extracts."""
    prompt: tuple[str, str] | None = None
    for where, text in candidates:
        if not text or not text.strip():
            continue
        extracted = rule.extract(text)
        if extracted:
            text, where = extracted, f"{where} (RAGWATCH_QUESTION_PATTERN)"
        evidence = prompt_evidence(text, documents)
        if evidence is None:
            return Chosen(text)
        prompt = prompt or (where, evidence)
    if prompt is None:
        return Chosen(None)
    where, evidence = prompt
    return Chosen(
        None, (QUESTION_IS_PROMPT, "question", f"{where} holds the prompt, with {evidence}: {FIX}")
    )


NO_RULE = QuestionRule()
