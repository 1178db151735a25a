"""ragwatch's judge prompts: one request where ragas sends several, each verdict numbered and
checked.

| prompt | replaces (ragas, per item) | asks for |
|---|---|---|
| `ClaimExtraction` | Faithfulness' and NoiseSensitivity's statement generators (1 per text) | the claims of the answer and of the reference, in one reply |
| `QuestionsBack` (sent with `n` = N) | AnswerRelevancy's N question generations | one question per sample; the N samples in one request |
| `ClaimVerification` | Faithfulness' NLI verdicts, ContextRecall's attributions, ContextPrecision's 1 verdict per context | one verdict per answer claim, per reference claim and per context |
| `ClaimSources` | NoiseSensitivity's 2 verdict requests per context + 1 against the reference | for each claim, the contexts that each support it; for each answer claim, the reference's verdict |

Each verdict keeps ragas' definition (see `pipelines.evaluation.metrics.judge` for the arithmetic):
- an answer claim is *supported* when it can be directly inferred from the contexts taken together
  (ragas Faithfulness' NLI verdict);
- a reference claim is *attributed* when it can be attributed to the contexts taken together (ragas
  ContextRecall);
- a context is *useful* when it was useful in arriving at the reference answer (ragas
  ContextPrecisionWithReference's verdict, asked per context);
- per context and against the reference: a claim can be directly inferred from that one text (ragas
  NoiseSensitivity's statement-faithfulness verdict).

Verdicts carry the 1-based number of the claim or context they judge, so a reply that skips,
repeats or invents one is caught (`ReplyProblem`) instead of being averaged over what came back.

Prompt order for a prefix cache (vLLM's automatic prefix caching): each prompt's system message is
fixed, and the inputs are rendered stable part first — the contexts, then the question and the
reference, then the claims, which change between the clean and the noisy answer of noise ΔF.

Offline, every prompt answers through `pipelines.models.offline_judge`, the rule the ragas
requests answered offline use too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pipelines.models.offline_judge import claims, question_back, support, useful
from pipelines.models.prompts import Prompt

Verdict = Literal[0, 1]


class ReplyProblem(ValueError):
    """A judge reply that does not answer what was asked; the message is the score's failure
    reason."""


def by_number(numbers: Sequence[int], expected: int, what: str) -> list[int]:
    """Positions (0-based) of the verdicts for items 1..expected, in item order; ReplyProblem when
    the numbers are not exactly 1..expected, each once (reordered is fine)."""
    counts = Counter(numbers)
    missing = [n for n in range(1, expected + 1) if counts[n] == 0]
    repeated = sorted(n for n, c in counts.items() if c > 1 and 1 <= n <= expected)
    unknown = sorted(n for n in counts if not 1 <= n <= expected)
    if missing or repeated or unknown:
        problems = [
            f"missing {what} {_numbers(missing)}" if missing else "",
            f"{what} {_numbers(repeated)} judged more than once" if repeated else "",
            f"no {what} {_numbers(unknown)} was asked about" if unknown else "",
        ]
        detail = "; ".join(p for p in problems if p)
        raise ReplyProblem(
            f"the judge returned {len(numbers)} verdicts for {expected} {what}s ({detail})"
        )
    position = {n: i for i, n in enumerate(numbers)}
    return [position[n] for n in range(1, expected + 1)]


def _numbers(numbers: list[int]) -> str:
    return ", ".join(str(n) for n in numbers)


# --- claims -------------------------------------------------------------------------------------


class ClaimsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str
    texts: list[str] = Field(min_length=1)
    """The texts to break into claims, numbered from 1 in the prompt (the answer, the reference)."""


class TextClaims(BaseModel):
    text: int
    """Which text (1-based) these claims are from."""
    claims: list[str]


class ClaimsOutput(BaseModel):
    texts: list[TextClaims]

    def claims_of(self, expected: int) -> list[list[str]]:
        """The claims of texts 1..expected, in order; ReplyProblem when a text is missing or
        repeated."""
        order = by_number([t.text for t in self.texts], expected, "text")
        return [[c.strip() for c in self.texts[i].claims if c.strip()] for i in order]


class ClaimExtraction(Prompt[ClaimsInput, ClaimsOutput]):
    name = "judge_claims"
    input_model = ClaimsInput
    output_model = ClaimsOutput
    instructions = """
You break texts into claims for a fact-checker. The input has a question and numbered texts (answers
to that question). For each text, list every claim it makes: short, self-contained statements, each
understandable without the others (no pronouns: name what they refer to). Keep the text's own words
and numbers; add nothing it does not say. A sentence that asserts nothing (a greeting, "I don't know")
gives no claim. Reply with one entry per text, in the form {"texts": [{"text": 1, "claims": ["..."]}]},
using the text's number.
"""

    def offline(self, inputs: ClaimsInput) -> ClaimsOutput:
        return ClaimsOutput(
            texts=[TextClaims(text=n, claims=claims(t)) for n, t in enumerate(inputs.texts, 1)]
        )


# --- questions back (answer relevancy) ----------------------------------------------------------


class QuestionsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    response: str


class QuestionBack(BaseModel):
    question: str
    noncommittal: Verdict
    """1 when the response is evasive or vague ("I don't know", "I'm not sure"), else 0."""


class QuestionsBack(Prompt[QuestionsInput, QuestionBack]):
    """Sent with `n` = N: the N samples are ragas' N independently generated questions."""

    name = "judge_question_back"
    input_model = QuestionsInput
    output_model = QuestionBack
    temperature = 0.3  # ragas' own temperature when it asks for several completions
    instructions = """
Write the question that the given response answers. Also say whether the response is noncommittal:
1 when it is evasive, vague or ambiguous ("I don't know", "I'm not sure"), 0 when it commits to an
answer. Write the question in the language of the response.
"""

    def offline(self, inputs: QuestionsInput) -> QuestionBack:
        return self.offline_sample(inputs, 0)

    def offline_sample(self, inputs: QuestionsInput, index: int) -> QuestionBack:
        question, noncommittal = question_back(inputs.response, index)
        return QuestionBack(question=question, noncommittal=noncommittal)


# --- verification (faithfulness, context recall, context precision) ----------------------------


class VerificationInput(BaseModel):
    """Stable part first, for a prefix cache: contexts, question, reference, then the claims."""

    model_config = ConfigDict(extra="forbid")

    contexts: list[str] = Field(min_length=1)
    question: str
    reference: str | None = None
    judge_contexts: bool = False
    """Whether to judge each context's usefulness for the reference answer (context precision)."""
    reference_claims: list[str] = Field(default_factory=list)
    answer_claims: list[str] = Field(default_factory=list)


class ClaimVerdict(BaseModel):
    claim: int
    """Which claim (1-based) this verdict is about."""
    reason: str
    verdict: Verdict


class ContextVerdict(BaseModel):
    context: int
    """Which context (1-based) this verdict is about."""
    reason: str
    verdict: Verdict


class VerificationOutput(BaseModel):
    answer_claims: list[ClaimVerdict]
    """1: the answer claim can be directly inferred from the contexts taken together."""
    reference_claims: list[ClaimVerdict]
    """1: the reference claim can be attributed to the contexts taken together."""
    contexts: list[ContextVerdict]
    """1: the context was useful in arriving at the reference answer."""

    def answer_verdicts(self, expected: int) -> list[int]:
        return [
            self.answer_claims[i].verdict
            for i in by_number([v.claim for v in self.answer_claims], expected, "answer claim")
        ]

    def reference_verdicts(self, expected: int) -> list[int]:
        return [
            self.reference_claims[i].verdict
            for i in by_number(
                [v.claim for v in self.reference_claims], expected, "reference claim"
            )
        ]

    def context_verdicts(self, expected: int) -> list[int]:
        return [
            self.contexts[i].verdict
            for i in by_number([v.context for v in self.contexts], expected, "context")
        ]


class ClaimVerification(Prompt[VerificationInput, VerificationOutput]):
    name = "judge_verification"
    input_model = VerificationInput
    output_model = VerificationOutput
    instructions = """
You are a strict fact-checker. The input has numbered contexts (retrieved passages, numbered from 1),
a question, maybe a reference answer, and numbered claims (numbered from 1 in each list). Judge only
from the contexts, never from your own knowledge.
- answer_claims: for every answer claim, verdict 1 if it can be directly inferred from the contexts
  (taken together), else 0.
- reference_claims: for every reference claim, verdict 1 if it can be attributed to the contexts
  (taken together), else 0.
- contexts: only when judge_contexts is true, for every context, verdict 1 if it was useful in
  arriving at the reference answer, else 0; otherwise an empty list.
Give one verdict for every item asked about, with its number and a short reason; an empty list in
the input gets an empty list in the reply.
"""

    def offline(self, inputs: VerificationInput) -> VerificationOutput:
        together = "\n".join(inputs.contexts)

        def verdicts(statements: list[str]) -> list[ClaimVerdict]:
            judged = (support(claim, together) for claim in statements)
            return [
                ClaimVerdict(claim=n, reason=reason, verdict=v)
                for n, (v, reason) in enumerate(judged, 1)
            ]

        contexts = []
        if inputs.judge_contexts:
            judged = (useful(context, inputs.reference or "") for context in inputs.contexts)
            contexts = [
                ContextVerdict(context=n, reason=reason, verdict=v)
                for n, (v, reason) in enumerate(judged, 1)
            ]
        return VerificationOutput(
            answer_claims=verdicts(inputs.answer_claims),
            reference_claims=verdicts(inputs.reference_claims),
            contexts=contexts,
        )


# --- claim sources (ragas noise sensitivity) ----------------------------------------------------


class SourcesInput(BaseModel):
    """Stable part first, for a prefix cache: contexts, question, reference, then the claims."""

    model_config = ConfigDict(extra="forbid")

    contexts: list[str] = Field(min_length=1)
    question: str
    reference: str
    reference_claims: list[str]
    answer_claims: list[str]


class ReferenceClaimSources(BaseModel):
    claim: int
    contexts: list[int]
    """The contexts (1-based) from each of which, on its own, the claim can be directly inferred."""


class AnswerClaimSources(BaseModel):
    claim: int
    reason: str
    by_reference: Verdict
    """1: the claim can be directly inferred from the reference answer."""
    contexts: list[int]
    """The contexts (1-based) from each of which, on its own, the claim can be directly inferred."""


class SourcesOutput(BaseModel):
    reference_claims: list[ReferenceClaimSources]
    answer_claims: list[AnswerClaimSources]

    def matrices(
        self, n_reference: int, n_answer: int, n_contexts: int
    ) -> tuple[list[list[int]], list[list[int]], list[int]]:
        """(reference claim × context, answer claim × context, answer claim vs reference) as 0/1, in
        claim order; ReplyProblem for a missing, repeated or unknown claim, or a context that does
        not exist."""
        reference = [
            self.reference_claims[i]
            for i in by_number(
                [s.claim for s in self.reference_claims], n_reference, "reference claim"
            )
        ]
        answer = [
            self.answer_claims[i]
            for i in by_number([s.claim for s in self.answer_claims], n_answer, "answer claim")
        ]
        for sources in (*reference, *answer):
            unknown = sorted({c for c in sources.contexts if not 1 <= c <= n_contexts})
            if unknown:
                raise ReplyProblem(
                    f"the judge cited context {_numbers(unknown)} of {n_contexts} contexts"
                )

        def row(sources: list[int]) -> list[int]:
            return [int(c in sources) for c in range(1, n_contexts + 1)]

        return (
            [row(s.contexts) for s in reference],
            [row(s.contexts) for s in answer],
            [s.by_reference for s in answer],
        )


class ClaimSources(Prompt[SourcesInput, SourcesOutput]):
    name = "judge_claim_sources"
    input_model = SourcesInput
    output_model = SourcesOutput
    instructions = """
You are a strict fact-checker. The input has numbered contexts (retrieved passages, numbered from 1),
a question, a reference answer, and numbered reference claims and answer claims (each list numbered
from 1). Judge only from the texts given, never from your own knowledge.
- reference_claims: for every reference claim, the numbers of the contexts from which, each on its
  own, the claim can be directly inferred (an empty list when none).
- answer_claims: for every answer claim, by_reference 1 if the claim can be directly inferred from the
  reference answer, else 0; and the numbers of the contexts from which, each on its own, the claim can
  be directly inferred (an empty list when none), with a short reason.
Give an entry for every claim, with its number.
"""

    def offline(self, inputs: SourcesInput) -> SourcesOutput:
        def sources(claim: str) -> list[int]:
            return [n for n, context in enumerate(inputs.contexts, 1) if support(claim, context)[0]]

        answer = []
        for n, claim in enumerate(inputs.answer_claims, 1):
            by_reference, reason = support(claim, inputs.reference)
            answer.append(
                AnswerClaimSources(
                    claim=n, reason=reason, by_reference=by_reference, contexts=sources(claim)
                )
            )
        reference = [
            ReferenceClaimSources(claim=n, contexts=sources(c))
            for n, c in enumerate(inputs.reference_claims, 1)
        ]
        return SourcesOutput(reference_claims=reference, answer_claims=answer)


def judge_prompts() -> list[Prompt]:
    """ragwatch's judge prompts, for the prompt registry."""
    return [ClaimExtraction(), QuestionsBack(), ClaimVerification(), ClaimSources()]
