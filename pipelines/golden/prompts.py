"""The prompts of golden-set generation and filtering, each with its offline answer.

Offline implementations are extractive and deterministic: questions are templates around a key
term of a chunk sentence, answers are the chunk's own sentences, judgements are lexical. They
exercise every code path honestly, and every record they produce names the offline model.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from pipelines.core.agent_tools import TOOL_REQUESTS, tool_arguments
from pipelines.core.language import template_language
from pipelines.core.text import (
    FILLER_WORDS,
    NOT_ENOUGH,
    content_tokens,
    coverage,
    fold,
    sentences,
    words,
)
from pipelines.models.prompts import Prompt

ENGINEER_VOICE = (
    "Write like an engineer looking for an operational fact in this documentation. "
    "Use the language of the chunk (Spanish stays Spanish)."
)


class SeedChunk(BaseModel):
    chunk_id: str
    document: str
    section: str
    language: str
    text: str

    @property
    def topic(self) -> str:
        """The section as a person names it in a question: "11.5. Logging" -> "Logging"."""
        return SECTION_NUMBER.sub("", self.section) or self.section


class QA(BaseModel):
    question: str
    answer: str
    variant: str = "plain"


class QAList(BaseModel):
    items: list[QA]


class ChunkQuestionsInput(BaseModel):
    chunk: SeedChunk
    n: int = Field(ge=1, le=5)


class MultiHopInput(BaseModel):
    chunks: list[SeedChunk] = Field(min_length=2, max_length=4)
    variant: Literal["bridge", "boundary"]


class AdversarialInput(BaseModel):
    chunk: SeedChunk
    kind: Literal["false_premise", "not_in_corpus"]


class Context(BaseModel):
    chunk_id: str
    text: str


class AnswerInput(BaseModel):
    question: str
    language: str
    contexts: list[Context]


class GroundedAnswer(BaseModel):
    answer: str
    supporting_chunk_ids: list[str]


class ToolTripleInput(BaseModel):
    chunk: SeedChunk
    tool: Literal["vector_search", "sql_query", "web_search"]


class ToolTriple(BaseModel):
    question: str
    expected_tool: str
    expected_args: dict[str, Any]


class QuestionInput(BaseModel):
    question: str


class FreeAnswer(BaseModel):
    answer: str


class GroundingInput(BaseModel):
    answer: str
    contexts: list[str]


class Claim(BaseModel):
    claim: str
    supported: bool


class ClaimVerdicts(BaseModel):
    claims: list[Claim]


# --- offline helpers -------------------------------------------------------------------------

CODE_TERM = re.compile(
    r"`([^`]{2,40})`|\b([A-Za-z_]\w*(?:[./][A-Za-z_]\w*)+|\w+\(\)|[a-z]+_[a-z_]+)\b"
)
VERB_ENDINGS = ("ed", "ing", "ado", "ido", "ando", "iendo")
# Adverbs say how, not what: "-ly" and "-mente" words are never the thing a question asks about, bar
# these nouns and adjectives of schedules.
ADVERB_ENDINGS = ("ly", "mente")
NOT_ADVERBS = frozenset(
    "anomaly assembly family supply apply reply multiply monopoly nightly weekly monthly daily hourly yearly".split()
)
# Section numbering ("11.5. ", "2.1 ", "A.3 ", Texinfo's "1 " before a capital) is the document's
# layout, not the topic's name.
SECTION_NUMBER = re.compile(
    r"^\s*(?:\d+\.(?:\d+\.?)*|\d+(?:\.\d+)+|[A-Z](?:\.\d+)+\.?|\d+(?=\s+[A-Z]))\s+"
)


def _pick(options: list[str], *keys: str) -> str:
    digest = hashlib.sha256("\x00".join(keys).encode()).digest()
    return options[digest[0] % len(options)]


def key_term(sentence: str, fallback: str) -> str:
    """What a question about `sentence` names: its first code term, else its longest content
    word."""
    for match in CODE_TERM.finditer(sentence):
        term = match.group(1) or match.group(2)
        parts = [fold(p) for p in re.split(r"[./_()]+", term) if p]
        if any(
            content_tokens(p) and p not in FILLER_WORDS for p in parts
        ):  # "e.g", "and/or" are not code
            return term
    candidates = [
        w for w in words(sentence) if is_content_word(w) and not w.lower().endswith(VERB_ENDINGS)
    ]
    return max(candidates, key=len) if candidates else fallback


def is_content_word(word: str) -> bool:
    """A word a question can be about: five letters or more, no stopword, filler word or adverb."""
    folded = fold(word)
    if len(word) < 5 or folded not in set(content_tokens(word)) or folded in FILLER_WORDS:
        return False
    return folded in NOT_ADVERBS or not folded.endswith(ADVERB_ENDINGS)


def answerable_sentences(text: str) -> list[str]:
    """Sentences worth asking about: complete, informative, not code listings."""
    good = [s for s in sentences(text) if 8 <= len(words(s)) <= 45 and not s.rstrip().endswith(":")]
    return sorted(good, key=lambda s: -len(set(content_tokens(s))))


SINGLE_TEMPLATES = {
    "en": [
        "According to the docs, what happens with {term} in {section}?",
        "What should I know about {term} when working with {section}?",
        "How does {section} treat {term}?",
    ],
    "es": [
        "Según la documentación, ¿qué ocurre con {term} en {section}?",
        "¿Qué hay que saber sobre {term} al trabajar con {section}?",
        "¿Cómo trata {section} a {term}?",
    ],
}
PARAPHRASE_TEMPLATES = {
    "en": [
        "In practice, what is the rule for {term} in {section}?",
        "I'm stuck with {term} in {section}: how does it behave?",
        "Quick one on {section}: what's the deal with {term}?",
    ],
    "es": [
        "En la práctica, ¿cuál es la regla para {term} en {section}?",
        "Me he atascado con {term} en {section}: ¿cómo se comporta?",
        "Una duda rápida sobre {section}: ¿qué pasa con {term}?",
    ],
}
MULTI_TEMPLATES = {
    "en": "How do {a} and {b} relate, according to the documentation?",
    "es": "Según la documentación, ¿qué relación hay entre {a} y {b}?",
}
FALSE_PREMISE = {
    "en": "Why was {term} removed from {section} in the last release?",
    "es": "¿Por qué se eliminó {term} de {section} en la última versión?",
}
NOT_IN_CORPUS = {
    "en": [
        "What is the monthly price of the enterprise plan for {section}?",
        "Which Kubernetes autoscaling limits apply to {section} in production?",
    ],
    "es": [
        "¿Cuánto cuesta al mes el plan enterprise de {section}?",
        "¿Qué límites de autoescalado de Kubernetes se aplican a {section} en producción?",
    ],
}


def _lang(language: str) -> str:
    """The offline templates' language: the chunk's, or English where they have none in it (the item
    keeps the chunk's language as its own)."""
    return template_language(language, SINGLE_TEMPLATES)


# --- tasks -----------------------------------------------------------------------------------


class ChunkQuestions(Prompt[ChunkQuestionsInput, QAList]):
    name = "golden_chunk_questions"
    input_model, output_model = ChunkQuestionsInput, QAList
    temperature = 0.7
    instructions = f"""
You write evaluation questions for a retrieval-augmented assistant. {ENGINEER_VOICE}
Given one documentation chunk, write `n` questions that can be answered only with this chunk
(not with general knowledge), each with a reference answer taken from the chunk. Make the last
question a paraphrase of the first one: the same ask with the same answer, in the words a user
would type rather than the chunk's own (variant "paraphrase"); the others have variant "plain".
Never invent facts that are not in the chunk.
"""

    def offline(self, inputs: ChunkQuestionsInput) -> QAList:
        chunk, lang = inputs.chunk, _lang(inputs.chunk.language)
        items = []
        answerable = answerable_sentences(chunk.text)[: inputs.n]
        for i, sentence in enumerate(answerable):
            paraphrase = i == inputs.n - 1 and inputs.n > 1
            if (
                paraphrase
            ):  # the first question again, in a user's words: the same term, section and answer
                sentence = answerable[0]
            term = key_term(sentence, chunk.topic)
            templates = PARAPHRASE_TEMPLATES[lang] if paraphrase else SINGLE_TEMPLATES[lang]
            template = _pick(templates, chunk.chunk_id, str(i))
            items.append(
                QA(
                    question=template.format(term=term, section=chunk.topic),
                    answer=sentence,
                    variant="paraphrase" if paraphrase else "plain",
                )
            )
        return QAList(items=items)


class MultiHopQuestion(Prompt[MultiHopInput, QA]):
    name = "golden_multi_hop_question"
    input_model, output_model = MultiHopInput, QA
    temperature = 0.7
    instructions = f"""
You write one multi-hop evaluation question. {ENGINEER_VOICE} The question must need facts from
every given chunk together; the reference answer combines them and adds nothing else.
"""

    def offline(self, inputs: MultiHopInput) -> QA:
        picked = [answerable_sentences(c.text)[:1] or sentences(c.text)[:1] for c in inputs.chunks]
        facts = [s[0] for s in picked if s]
        terms = [key_term(f, c.topic) for f, c in zip(facts, inputs.chunks)]
        lang = _lang(inputs.chunks[0].language)
        question = MULTI_TEMPLATES[lang].format(
            a=terms[0], b=terms[-1] if len(terms) > 1 else inputs.chunks[-1].topic
        )
        return QA(question=question, answer=" ".join(facts), variant=inputs.variant)


class AdversarialQuestion(Prompt[AdversarialInput, QA]):
    name = "golden_adversarial_question"
    input_model, output_model = AdversarialInput, QA
    temperature = 0.7
    instructions = f"""
You write one adversarial evaluation question about the documentation. {ENGINEER_VOICE}
kind=false_premise: the question assumes something the chunk contradicts or never says.
kind=not_in_corpus: a plausible question the documentation cannot answer.
The reference answer says there is not enough information (in the chunk's language).
"""

    def offline(self, inputs: AdversarialInput) -> QA:
        chunk, lang = inputs.chunk, _lang(inputs.chunk.language)
        if inputs.kind == "false_premise":
            term = key_term(next(iter(answerable_sentences(chunk.text)), chunk.topic), chunk.topic)
            question = FALSE_PREMISE[lang].format(term=term, section=chunk.topic)
        else:
            question = _pick(NOT_IN_CORPUS[lang], chunk.chunk_id).format(section=chunk.topic)
        return QA(question=question, answer=NOT_ENOUGH[lang], variant=inputs.kind)


class AnswerFromContexts(Prompt[AnswerInput, GroundedAnswer]):
    name = "golden_answer_from_contexts"
    input_model, output_model = AnswerInput, GroundedAnswer
    instructions = """
Answer the question using only the given contexts, in the question's language, and list the ids
of the contexts that support the answer. If they do not contain the answer, say there is not
enough information and list no ids.
"""

    def offline(self, inputs: AnswerInput) -> GroundedAnswer:
        best = max(
            (
                (coverage(inputs.question, s), c.chunk_id, s)
                for c in inputs.contexts
                for s in sentences(c.text)
            ),
            default=(0.0, None, None),
        )
        if best[0] < 0.34:
            return GroundedAnswer(
                answer=NOT_ENOUGH[_lang(inputs.language)], supporting_chunk_ids=[]
            )
        return GroundedAnswer(answer=best[2], supporting_chunk_ids=[best[1]])


class ToolQuestion(Prompt[ToolTripleInput, ToolTriple]):
    name = "golden_tool_triple"
    input_model, output_model = ToolTripleInput, ToolTriple
    temperature = 0.7
    instructions = """
Write one user request for an agent with the tools vector_search(query, top_k), sql_query(query)
and web_search(query), such that the given tool is clearly the right first call, and give the
expected arguments. Use the chunk's topic and language.
"""

    def offline(self, inputs: ToolTripleInput) -> ToolTriple:
        chunk, lang = inputs.chunk, _lang(inputs.chunk.language)
        term = key_term(next(iter(answerable_sentences(chunk.text)), chunk.topic), chunk.topic)
        question = TOOL_REQUESTS[inputs.tool][lang].format(term=term)
        return ToolTriple(
            question=question,
            expected_tool=inputs.tool,
            expected_args=tool_arguments(inputs.tool, term),
        )


class ClosedBookAnswer(Prompt[QuestionInput, FreeAnswer]):
    name = "golden_closed_book_answer"
    input_model, output_model = QuestionInput, FreeAnswer
    instructions = (
        "Answer the question from general knowledge only, briefly. If you do not know, say so."
    )

    def offline(self, inputs: QuestionInput) -> FreeAnswer:
        # Knows nothing beyond the question itself: a question that leaks its answer is trivial.
        return FreeAnswer(answer=" ".join(content_tokens(inputs.question)))


class GroundingJudge(Prompt[GroundingInput, ClaimVerdicts]):
    name = "judge_claims_supported"
    input_model, output_model = GroundingInput, ClaimVerdicts
    instructions = """
Split the answer into atomic factual claims. For each claim decide whether the contexts
support it (true) or not (false). Judge only against the contexts, not your own knowledge.
"""

    def offline(self, inputs: GroundingInput) -> ClaimVerdicts:
        context = "\n".join(inputs.contexts)
        claims = sentences(inputs.answer) or [inputs.answer]
        return ClaimVerdicts(
            claims=[Claim(claim=c, supported=coverage(c, context) >= 0.6) for c in claims]
        )
