"""The reference RAG's prompt: the answer the built-in system under test generates from retrieved
contexts.

`RagAnswerPrompt` answers from retrieved contexts, citing nothing else. Offline it copies the
context sentences that cover the question best, with the faults
`pipelines.models.offline.OfflineFaults` configures (invented sentences, swapped numbers or names,
wrong abstentions, the wrong context, distraction by irrelevant chunks), each drawn from the
question and the sample number.

The judge of answer correctness is `pipelines.evaluation.metrics.correctness`.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from pipelines.core.language import template_language
from pipelines.core.text import NOT_ENOUGH, coverage, sentences
from pipelines.models.offline import (
    OfflineFaults,
    configured_faults,
    corrupt_sentences,
    draw,
    join_sentences,
)
from pipelines.models.prompts import Prompt

DEFAULT_RAG_PROMPT = """
You are a documentation assistant. Answer the question using only the numbered contexts, in
the language of the question, in at most three sentences. If the contexts do not contain the
answer, say that there is not enough information. Do not add facts from outside the contexts.
"""
RELEVANT = 0.2
"""Share of the question's content words a sentence must hold to be used; below it the offline RAG
abstains."""
SAMPLE_NOTE = "Independent sample {number} of this request."
SAMPLE_NOTE_PATTERN = re.compile(r"^Independent sample (\d+) of this request\.$", re.M)


class Context(BaseModel):
    chunk_id: str
    text: str


class RagInput(BaseModel):
    question: str
    language: str
    contexts: list[Context]
    sample: int = Field(default=0, ge=0, exclude=True)
    """0 for the request as is; k > 0 asks for an independent draw of the same request: sent as a
    note in the system message (never in the inputs), so it is a distinct request for caches and
    nothing else changes."""


class RagAnswer(BaseModel):
    answer: str


class RagAnswerPrompt(Prompt[RagInput, RagAnswer]):
    name = "rag_answer"
    input_model, output_model = RagInput, RagAnswer
    instructions = DEFAULT_RAG_PROMPT

    def __init__(self, prompt: str | None = None, *, faults: OfflineFaults | None = None):
        if prompt:
            self.instructions = (
                prompt  # a team's own prompt text; it is part of the cache key via the messages
            )
        self.faults = faults
        """The offline answer's fault rates; None: the configured ones
        (`RAGWATCH_OFFLINE_FAULTS__*`)."""

    def messages(self, inputs: RagInput) -> list[dict[str, str]]:
        messages = super().messages(inputs)
        if inputs.sample:
            messages[0]["content"] += "\n\n" + SAMPLE_NOTE.format(number=inputs.sample + 1)
        return messages

    def inputs_from_messages(self, messages: list[dict]) -> RagInput:
        inputs = super().inputs_from_messages(messages)
        system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
        note = SAMPLE_NOTE_PATTERN.search(system if isinstance(system, str) else "")
        return inputs.model_copy(update={"sample": int(note.group(1)) - 1}) if note else inputs

    def offline(self, inputs: RagInput) -> RagAnswer:
        """Extractive: the two context sentences that cover the question best, in rank order; then
        the configured faults, drawn from the question and the sample number."""
        faults = self.faults if self.faults is not None else configured_faults()
        lang = template_language(inputs.language, NOT_ENOUGH)
        seed = (inputs.question, inputs.sample)
        texts = [c.text for c in inputs.contexts]
        by_context = [
            [(coverage(inputs.question, s), s) for s in sentences(text)] for text in texts
        ]
        least = _least_relevant(by_context)
        if least is not None and draw("wrong_context", *seed) < faults.wrong_context:
            # Answers from the context that says least about the question, as a model that misread
            # it.
            scored = [(cov, 0, s) for cov, s in by_context[least]]
            best = sorted(scored, key=lambda t: -t[0])[:2]
        else:
            scored = [
                (cov, rank, s) for rank, context in enumerate(by_context) for cov, s in context
            ]
            best = sorted(
                (item for item in scored if item[0] >= RELEVANT), key=lambda t: (-t[0], t[1])
            )[:2]
        if not best:
            return RagAnswer(answer=NOT_ENOUGH[lang])
        if draw("wrong_abstention", *seed) < faults.wrong_abstention:
            return RagAnswer(answer=NOT_ENOUGH[lang])
        chosen = [s for _, _, s in sorted(best, key=lambda t: t[1])]
        if least is not None and draw("noise", *seed) < faults.noise_susceptibility:
            distractor = next((s for _, s in by_context[least] if s not in chosen), None)
            if distractor:
                chosen.append(distractor)
        chosen = corrupt_sentences(
            chosen,
            faults,
            topic=inputs.question,
            language=lang,
            evidence="\n".join(texts),
            seed=seed,
        )
        return RagAnswer(answer=join_sentences(chosen))


def _least_relevant(by_context: list[list[tuple[float, str]]]) -> int | None:
    """The context whose best sentence covers the question least (the last such), when there are two
    or more."""
    usable = [i for i, context in enumerate(by_context) if context]
    if len(usable) < 2:
        return None
    return min(reversed(usable), key=lambda i: max(cov for cov, _ in by_context[i]))
