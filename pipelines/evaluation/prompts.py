"""The reference RAG's generation prompt: answer from retrieved contexts, citing nothing else."""

from __future__ import annotations

from pydantic import BaseModel

from pipelines.models.prompts import Prompt
from pipelines.text import NOT_ENOUGH, coverage, sentences

DEFAULT_RAG_PROMPT = """
You are a documentation assistant. Answer the question using only the numbered contexts, in
the language of the question, in at most three sentences. If the contexts do not contain the
answer, say that there is not enough information. Do not add facts from outside the contexts.
"""
RELEVANT = 0.2
"""Share of the question's content words a sentence must hold to be used; below it the offline RAG abstains."""


class Context(BaseModel):
    chunk_id: str
    text: str


class RagInput(BaseModel):
    question: str
    language: str
    contexts: list[Context]


class RagAnswer(BaseModel):
    answer: str


class RagAnswerPrompt(Prompt[RagInput, RagAnswer]):
    name = "rag_answer"
    input_model, output_model = RagInput, RagAnswer
    instructions = DEFAULT_RAG_PROMPT

    def __init__(self, prompt: str | None = None):
        if prompt:
            self.instructions = prompt  # a team's own prompt text; it is part of the cache key via the messages

    def offline(self, inputs: RagInput) -> RagAnswer:
        """Extractive: the two context sentences that cover the question best, in rank order."""
        scored = [(coverage(inputs.question, s), rank, s) for rank, c in enumerate(inputs.contexts) for s in sentences(c.text)]
        best = sorted((item for item in scored if item[0] >= RELEVANT), key=lambda t: (-t[0], t[1]))[:2]
        if not best:
            return RagAnswer(answer=NOT_ENOUGH["es" if inputs.language == "es" else "en"])
        return RagAnswer(answer=" ".join(s for _, _, s in sorted(best, key=lambda t: t[1])))
